import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import '../../src/kafka/kafkajs.ts';
import type { FetchedMessage } from '../../src/kafka/fixes/aborted-transactions-filter.ts';
import { abortFilterModulePath } from '../../src/kafka/fixes/kafkajs-internals.ts';
import { fixState } from '../../src/kafka/fixes/state.ts';

const require = createRequire(import.meta.url);
const { originals } = fixState;
type Filter = NonNullable<typeof originals.filterAbortedMessages>;
const fixed = require(abortFilterModulePath) as Filter;
const original = originals.filterAbortedMessages as Filter;

const record = (offset: number, producerId: string, key = `k${offset}`): FetchedMessage => ({
  offset: String(offset),
  key: Buffer.from(key),
  batchContext: { producerId, inTransaction: true },
});
const abortMarker = (offset: number, producerId: string): FetchedMessage => ({
  offset: String(offset),
  key: Buffer.from([0, 0, 0, 0]),
  isControlRecord: true,
  batchContext: { producerId, inTransaction: true },
});
const offsets = (messages: FetchedMessage[]) => messages.map((m) => Number(m.offset));

// Producers 7 and 8 interleave two aborted transactions (first offsets 0 and 1) in one partition;
// producer 9 commits one record after both abort markers.
const log = [
  record(0, '7'),
  record(1, '8'),
  record(2, '7'),
  record(3, '8'),
  abortMarker(4, '7'),
  abortMarker(5, '8'),
  record(6, '9'),
];
const aborted = [
  { firstOffset: '0', producerId: '7' },
  { firstOffset: '1', producerId: '8' },
];

describe('read_committed filtering of interleaved aborted transactions', () => {
  it('hides both aborted transactions when a fetch starts after both began (kafkajs let one through)', () => {
    const fetchedFromOffset1 = log.slice(1);
    expect(offsets(original({ messages: fetchedFromOffset1, abortedTransactions: aborted }))).toContain(1);
    expect(offsets(fixed({ messages: fetchedFromOffset1, abortedTransactions: aborted }))).toEqual([4, 5, 6]);
  });

  it('filters a whole log read at once, in any order the broker lists the aborted transactions', () => {
    expect(offsets(fixed({ messages: log, abortedTransactions: [...aborted].reverse() }))).toEqual([4, 5, 6]);
  });

  it('ends an aborted transaction at its control record only, not at a user record keyed 0x00000000', () => {
    const userZeroKey = { ...record(2, '7'), key: Buffer.from([0, 0, 0, 0]) };
    const messages = [record(0, '7'), userZeroKey, record(3, '7'), abortMarker(4, '7'), record(5, '7')];
    const kept = fixed({ messages, abortedTransactions: [{ firstOffset: '0', producerId: '7' }] });
    expect(offsets(kept)).toEqual([4, 5]);
  });

  it('passes everything through when the fetch lists no aborted transaction', () => {
    expect(fixed({ messages: log, abortedTransactions: [] })).toBe(log);
  });
});
