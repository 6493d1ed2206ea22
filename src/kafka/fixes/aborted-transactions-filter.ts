import { abortFilterModulePath, require, swapModule } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 1. Aborted records of interleaved transactions reach read_committed consumers.
 *
 * kafkajs's `filterAbortedMessages` switches on at most ONE aborted transaction per message: when a
 * fetch starts after the first offsets of two aborted transactions of different producers (their
 * records interleave in the partition, as with two verifier producers or two verifier instances),
 * the second producer's aborted records are delivered (a kafkajs read_committed reader got 402
 * "committed" replies where Kafka's own console consumer read 400). It also takes any record whose
 * key is 0x00000000 for an abort marker.
 *
 * The replacement switches on every aborted transaction whose first offset has been reached, in
 * first-offset order, and takes only a control record as an abort marker.
 *
 * Test: test/kafka/abort-filter.test.ts; against the broker, test/kafka/transactions.int.test.ts ›
 * "hides interleaved aborted transactions of two producers from a reader fetching one batch at a
 * time" (two producers, alternating one-record batches, both aborted), which stock kafkajs fails.
 */

export interface FetchedMessage {
  offset: string;
  key: Buffer | null;
  isControlRecord?: boolean;
  batchContext: { producerId: string; inTransaction: boolean };
}
export type AbortFilter = (args: {
  messages: FetchedMessage[];
  abortedTransactions?: { firstOffset: string; producerId: string }[];
}) => FetchedMessage[];

/** The control record that ends an aborted transaction: key = version 0, type 0 (ABORT). */
function isAbortMarker(message: FetchedMessage): boolean {
  const key = message.key;
  return message.isControlRecord === true && key !== null && key.length >= 4 && key.readInt32BE(0) === 0;
}

const filterAbortedMessages: AbortFilter = ({ messages, abortedTransactions }) => {
  if (!abortedTransactions || abortedTransactions.length === 0) return messages;
  const pending = abortedTransactions
    .map((t) => ({ firstOffset: BigInt(t.firstOffset), producerId: String(t.producerId) }))
    .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  const aborting = new Set<string>();
  let next = 0;
  return messages.filter((message) => {
    const offset = BigInt(message.offset);
    while (next < pending.length && offset >= (pending[next] as { firstOffset: bigint }).firstOffset) {
      aborting.add((pending[next] as { producerId: string }).producerId);
      next++;
    }
    const producerId = String(message.batchContext.producerId);
    if (isAbortMarker(message)) {
      aborting.delete(producerId);
      return true; // a control record: kafkajs drops those right after this filter
    }
    return !(aborting.has(producerId) && message.batchContext.inTransaction);
  });
};

export function install(state: KafkajsFixState): void {
  installOnce(state, 'aborted-transactions-filter', () => {
    state.originals.filterAbortedMessages = require(abortFilterModulePath) as AbortFilter;
    swapModule(abortFilterModulePath, filterAbortedMessages);
  });
}
