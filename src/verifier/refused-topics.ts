import { LRUCache } from 'lru-cache';
import { type OutgoingRecord, oversizeTopicsOf, refusedTopicsOf, troubledTopicsOf } from '../kafka/index.ts';
import { clip } from '../logger.ts';
import type { HandlerDeps } from './handle.ts';
import type { VerificationResult } from './reply.ts';

/**
 * How many topics each of RefusedReplyTopics' lists keeps, the least recently refused or asked
 * dropped first (asked again of the broker then): the topics are the requesters' choice.
 */
export const REFUSED_TOPICS_MAX = 1000;

/**
 * Custom reply topics the broker refused for good (an ACL, a `max.message.bytes` smaller than a
 * reply), each remembered for `ttlMs`: their replies go to the default reply topic meanwhile, without
 * a failed transaction first. Then the topic is tried again, in case its owner has fixed it. Topics
 * that refused a record batch of several replies (a `max.message.bytes` smaller than those together)
 * are remembered as long, their replies sent each in a batch of its own meanwhile; so are topics
 * whose subject the registry refused the reply schema, their Avro replies going to the default topic
 * meanwhile without asking the registry again (their JSON replies need no schema). Each list keeps
 * at most REFUSED_TOPICS_MAX topics.
 */
export class RefusedReplyTopics {
  readonly #until: LRUCache<string, number>;
  readonly #batchesUntil: LRUCache<string, number>;
  readonly #schemaUntil: LRUCache<string, number>;
  readonly ttlMs: number;
  readonly #now: () => number;

  constructor(ttlMs: number, now: () => number = () => performance.now(), max = REFUSED_TOPICS_MAX) {
    this.ttlMs = ttlMs;
    this.#now = now;
    this.#until = new LRUCache({ max });
    this.#batchesUntil = new LRUCache({ max });
    this.#schemaUntil = new LRUCache({ max });
  }

  refuse(topic: string): void {
    this.#until.set(topic, this.#now() + this.ttlMs);
  }

  has(topic: string): boolean {
    return this.#held(this.#until, topic);
  }

  refuseBatches(topic: string): void {
    this.#batchesUntil.set(topic, this.#now() + this.ttlMs);
  }

  batchesRefused(topic: string): boolean {
    return this.#held(this.#batchesUntil, topic);
  }

  refuseSchema(topic: string): void {
    this.#schemaUntil.set(topic, this.#now() + this.ttlMs);
  }

  schemaRefused(topic: string): boolean {
    return this.#held(this.#schemaUntil, topic);
  }

  #held(until: LRUCache<string, number>, topic: string): boolean {
    const end = until.get(topic);
    if (end === undefined) return false;
    if (this.#now() < end) return true;
    until.delete(topic);
    return false;
  }
}

/**
 * A reply that goes to the default reply topic instead of its `kafka_replyTopic` (`fields.refused`):
 * counted in `fraudlink_verifier_reply_topic_refused_total` and warned with `why`.
 */
export function countMovedReply(
  deps: Pick<HandlerDeps, 'metrics' | 'logger'>,
  fields: { requestId: string; refused: string } & Record<string, unknown>,
  why: string,
): void {
  deps.metrics.refusedReplyTopics.inc();
  deps.logger.warn({ ...fields, requestId: clip(fields.requestId), refused: clip(fields.refused) }, why);
}

/** A reply moved to the default reply topic off the topic it `refused`, and `why`. */
interface Move {
  requestId: string;
  refused: string;
  why: string;
}

/**
 * `records` with each reply meant for a custom reply topic that `refused` names moved to the default
 * reply topic, on the partition of its key, noted in `moves` with `why`. An Avro reply is encoded
 * again under the default topic's subject (the same schema; its reader is cached since its encoder
 * was made). DLQ copies and default-topic replies stay as they are.
 */
async function movedToDefaultTopic(
  records: OutgoingRecord[],
  refused: (topic: string) => boolean,
  deps: HandlerDeps,
  why: string,
  moves: Move[],
): Promise<OutgoingRecord[]> {
  const { repliesTopic, dlqTopic } = deps.config;
  const toMove = (record: OutgoingRecord) =>
    record.topic !== repliesTopic && record.topic !== dlqTopic && refused(record.topic);
  // Every commit passes here: most move nothing, and keep their records as they are.
  if (!records.some(toMove)) return records;
  return Promise.all(
    records.map(async (record) => {
      if (!toMove(record)) return record;
      const { partition: _, ...moved } = record;
      moved.topic = repliesTopic;
      if (String(record.headers?.['content-type']) !== 'application/json') {
        const { value } = await deps.registry.decode(record.value);
        moved.value = (await deps.replyEncoder(repliesTopic)).encode(value as unknown as VerificationResult);
      }
      moves.push({ requestId: String(record.key), refused: record.topic, why });
      return moved;
    }),
  );
}

/**
 * Of the topics that refused `err`'s transaction for good, those to send again with each reply in a
 * record batch of its own: refused only for size (oversizeTopicsOf), with several replies in the
 * transaction, not sent so already. `max.message.bytes` limits a record batch, and kafkajs puts all
 * of a partition's records of a send in one: a topic may take each reply alone, but not twelve.
 */
function batchRefusals(err: unknown, records: OutgoingRecord[], unbatched: ReadonlySet<string>): string[] {
  return oversizeTopicsOf(err).filter(
    (topic) => !unbatched.has(topic) && records.filter((r) => r.topic === topic).length > 1,
  );
}

/**
 * Runs `transaction` on `records`, the replies to a topic in `refused` moved to the default topic
 * first. One that custom reply topics refuse for good (refusedTopicsOf: an ACL, a max.message.bytes
 * smaller than a reply) is redone, on a renewed producer, with those topics' replies on the default
 * topic, the topics remembered in `refused`; each moved reply is counted and warned once the
 * transaction that carries it committed. Every request still gets one reply in one committed
 * transaction, and one requester's topic does not fail the batch of every requester of its
 * partitions, at every restart. A topic that refused a batch of several replies for its size is
 * first tried again with each reply in a batch of its own (batchRefusals), and moved only when it
 * refuses that too. Any other failure, or a refusal by the default or DLQ topic, is thrown. False
 * when `dropped()` says, before an attempt, that the records' requests were given up meanwhile (the
 * consumer crashed): nothing is committed then, for their next owner to answer.
 */
export async function transactionAvoidingRefusedTopics(
  records: OutgoingRecord[],
  refused: RefusedReplyTopics,
  deps: HandlerDeps,
  producer: {
    /** `unbatched`: the topics whose records go each in a record batch of its own. */
    transaction(records: OutgoingRecord[], unbatched: ReadonlySet<string>): Promise<void> | undefined;
    renewProducer(): Promise<void>;
    dropped(): boolean;
  },
): Promise<boolean> {
  const { repliesTopic, dlqTopic } = deps.config;
  /**
   * Counted and warned once their transaction committed: a commit given up (dropped) or failed moved
   * none of them, and the requests' next owner answers them.
   */
  const moves: Move[] = [];
  const movedOff = (isRefused: (topic: string) => boolean, why: string) =>
    movedToDefaultTopic(records, isRefused, deps, why, moves);
  records = await movedOff(
    (topic) => refused.has(topic),
    'kafka_replyTopic refused by the broker lately; replying on the default topic',
  );
  /** The topics cut into batches of one reply by this call's redos. */
  const cut = new Set<string>();
  /** Whether this call renewed the producer for refusals by topics none of its records go to. */
  let forgotLeftovers = false;
  for (;;) {
    if (producer.dropped()) return false;
    const unbatched = new Set(
      records.map((r) => r.topic).filter((topic) => cut.has(topic) || refused.batchesRefused(topic)),
    );
    try {
      await producer.transaction(records, unbatched);
      for (const { why, ...fields } of moves) countMovedReply(deps, fields, why);
      return true;
    } catch (err) {
      const ours = (topic: string) => topic === repliesTopic || topic === dlqTopic;
      const topics = new Set(refusedTopicsOf(err));
      if (topics.size === 0) {
        // No lasting refusal, but custom reply topics of this transaction the cluster could not
        // serve through all of the producer's retries (too few replicas in sync, no leader), while
        // its own topics were fine: a requester's topic, which must not hold back every reply.
        const troubled = troubledTopicsOf(err);
        const customOfThese = (topic: string) => !ours(topic) && records.some((r) => r.topic === topic);
        if (troubled.length > 0 && troubled.every(customOfThese)) for (const t of troubled) topics.add(t);
      }
      if (topics.size === 0 || [...topics].some(ours)) throw err;
      if (![...topics].some((topic) => records.some((r) => r.topic === topic))) {
        // Refused by topics none of these records go to: the producer's leftovers. kafkajs asks
        // the broker for every topic a producer has written to at each metadata refresh, so one a
        // requester deleted since fails all its later sends. A new producer has forgotten them.
        if (forgotLeftovers) throw err;
        forgotLeftovers = true;
        deps.logger.warn(
          { err, refused: [...topics].map((topic) => clip(topic)), refusedForMs: refused.ttlMs },
          'the broker refuses a kafka_replyTopic this producer wrote to before (deleted since?): ' +
            'the transaction is redone on a new producer',
        );
        for (const topic of topics) refused.refuse(topic);
        await producer.renewProducer();
        continue;
      }
      if (![...topics].every((topic) => records.some((r) => r.topic === topic))) {
        // Some refusals are leftovers, some this transaction's: the redo below, on a new
        // producer, moves the latter and forgets the former.
        for (const topic of topics) if (!records.some((r) => r.topic === topic)) topics.delete(topic);
      }
      const batched = batchRefusals(err, records, unbatched);
      if (batched.length > 0) {
        deps.logger.warn(
          { err, refused: batched, unbatchedForMs: refused.ttlMs },
          'the broker refuses a record batch of several replies to kafka_replyTopic (its ' +
            'max.message.bytes): the transaction is redone with each of its replies in a batch of its own',
        );
      }
      for (const topic of batched) {
        refused.refuseBatches(topic);
        cut.add(topic);
        topics.delete(topic);
      }
      if (topics.size > 0) {
        deps.logger.warn(
          { err, refused: [...topics], refusedForMs: refused.ttlMs },
          'the broker refuses kafka_replyTopic for good: the transaction is redone with its replies on the default topic',
        );
      }
      for (const topic of topics) refused.refuse(topic);
      await producer.renewProducer();
      // Each redo cuts a topic that refused the one before into batches of one reply, or leaves it
      // out: the redos end.
      records = await movedOff(
        (topic) => topics.has(topic),
        'kafka_replyTopic refused by the broker; replying on the default topic',
      );
    }
  }
}
