import type { OutgoingRecord, TransactionalProducer, TransactionOptions } from '../kafka/index.ts';

/**
 * A session's transactional producers, taking turns. After EndTxn the broker still writes the
 * transaction's markers, and a producer that begins its next transaction at once is answered
 * CONCURRENT_TRANSACTIONS and backs off: with back-to-back group commits that was most of the commit
 * time. The other producer's id has no transaction in completion. Transactions still run one after
 * another, so each one's consumer offsets are appended after the previous one's, and the group
 * coordinator keeps the offset appended last whatever order the markers arrive in.
 */
export class ProducerTurns {
  readonly #transactionalIds: readonly string[];
  readonly #open: (transactionalId: string, signal?: AbortSignal) => Promise<TransactionalProducer>;
  #producers: TransactionalProducer[] = [];
  #turn = 0;

  constructor(
    transactionalIds: readonly string[],
    open: (transactionalId: string, signal?: AbortSignal) => Promise<TransactionalProducer>,
  ) {
    this.#transactionalIds = transactionalIds;
    this.#open = open;
  }

  /** Opens every producer; throws the first refusal once all have settled, keeping those opened. */
  async open(signal?: AbortSignal): Promise<void> {
    const created = await Promise.allSettled(this.#transactionalIds.map((id) => this.#open(id, signal)));
    this.#producers = created.flatMap((c) => (c.status === 'fulfilled' ? [c.value] : []));
    const refused = created.find((c) => c.status === 'rejected');
    if (refused) throw refused.reason;
  }

  /** The producer whose turn it is, for every attempt of one commit. */
  next(): number {
    return this.#turn++ % this.#producers.length;
  }

  transaction(
    turn: number,
    records: OutgoingRecord[],
    options: TransactionOptions,
  ): Promise<void> | undefined {
    return this.#producers[turn]?.transaction(records, options);
  }

  /** Replaces the producer of `turn` by a new one with the same transactional id. */
  async renew(turn: number): Promise<void> {
    await this.#producers[turn]?.close().catch(() => {});
    this.#producers[turn] = await this.#open(this.#transactionalIds[turn] as string);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#producers.map((p) => p.close()));
  }
}
