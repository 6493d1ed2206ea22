import { describe, expect, it } from 'vitest';
import type { AlertEvent } from '../../src/alert-events.ts';
import { DecodeError, SchemaRegistryError } from '../../src/errors.ts';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { newestEvents, type SkippedRecord } from '../../src/table/newest-events.ts';
import { alertState } from './alerts.ts';

/**
 * A record of partition 0 whose value names what the fake decoder makes of it: `up:<n>` an upsert
 * numbered n, `off` a deactivation, `bad` undecodable; a null value is a tombstone.
 */
const record = (offset: number, key: string, value: string | null): IncomingRecord => ({
  topic: 'alerts',
  partition: 0,
  offset: String(offset),
  key: Buffer.from(key),
  value: value === null ? null : Buffer.from(value),
  headers: {},
  timestamp: 0,
});

const unreadable = (offset: number): IncomingRecord => ({
  ...record(offset, '', null),
  key: null,
  unreadableBatch: {
    firstOffset: String(offset - 1),
    lastOffset: String(offset),
    codec: 'zstd',
    reason: 'broken',
    bytes: 3,
    compressed: Buffer.from('abc'),
  } as unknown as IncomingRecord['unreadableBatch'],
});

const upsert = (iban: string, n: number): AlertEvent => ({
  type: 'AlertUpserted',
  iban,
  alert: alertState(iban, n),
});

/** The fake decoder, and the offsets it was asked to decode. */
function fakeDecoder({ async = false } = {}) {
  const decoded: number[] = [];
  const decode = (r: IncomingRecord): AlertEvent | Promise<AlertEvent> => {
    decoded.push(Number(r.offset));
    const iban = r.key?.toString('utf8') ?? '';
    const value = r.value?.toString('utf8') ?? null;
    const event = (): AlertEvent => {
      if (value === null) return { type: 'Tombstone', iban, alert: null };
      if (value === 'off') return { type: 'AlertDeactivated', iban, alert: null };
      if (value === 'bad') throw new DecodeError(`offset ${r.offset} cannot be decoded`);
      if (value === 'registry down') throw new SchemaRegistryError('the registry is out of reach');
      return upsert(iban, Number(value.slice('up:'.length)));
    };
    return async ? Promise.resolve().then(event) : event();
  };
  return { decode, decoded };
}

async function run(records: IncomingRecord[], options?: { async?: boolean }) {
  const { decode, decoded } = fakeDecoder(options);
  const skipped: SkippedRecord[] = [];
  const result = await newestEvents(records, decode, (s) => skipped.push(s));
  return { ...result, decoded, skipped };
}

describe('the newest events of a chunk', () => {
  it("keeps each key's newest event and decodes no record that a later one of its key overwrites", async () => {
    const result = await run([
      record(0, 'A', 'up:1'),
      record(1, 'B', 'up:1'),
      record(2, 'A', 'up:2'),
      record(3, 'A', 'up:3'),
    ]);
    expect(result.events).toEqual([upsert('B', 1), upsert('A', 3)]);
    expect(result.decoded).toEqual([3, 1]);
    expect(result.skipped).toEqual([]);
  });

  it('keeps the previous event of a key whose last record is undecodable, and reports the skip', async () => {
    const result = await run([
      record(0, 'A', 'up:1'),
      record(1, 'A', 'up:2'),
      record(2, 'A', 'bad'),
      record(3, 'B', 'bad'),
    ]);
    expect(result.events).toEqual([upsert('A', 2)]);
    expect(result.decoded).toEqual([3, 2, 1]);
    expect(result.skipped.map((s) => [s.reason, s.record.offset])).toEqual([
      ['undecodable', '3'],
      ['undecodable', '2'],
    ]);
  });

  it('lets a newest tombstone or deactivation remove the key, older upserts unread', async () => {
    const result = await run([
      record(0, 'A', 'up:1'),
      record(1, 'B', 'up:1'),
      record(2, 'A', null),
      record(3, 'B', 'off'),
    ]);
    expect(result.events).toEqual([
      { type: 'Tombstone', iban: 'A', alert: null },
      { type: 'AlertDeactivated', iban: 'B', alert: null },
    ]);
    expect(result.decoded).toEqual([3, 2]);
  });

  it('gives the events in the order of their records across keys', async () => {
    const result = await run([
      record(0, 'C', 'up:1'),
      record(1, 'A', 'up:1'),
      record(2, 'C', 'up:2'),
      record(3, 'B', 'up:1'),
      record(4, 'A', 'up:2'),
    ]);
    expect(result.events.map((e) => `${e.iban}${e.alert?.reportsCount}`)).toEqual(['C2', 'B1', 'A2']);
  });

  it('skips an unreadable batch without deciding any key', async () => {
    const result = await run([record(0, 'A', 'up:1'), unreadable(2), record(3, 'B', 'up:1')]);
    expect(result.events).toEqual([upsert('A', 1), upsert('B', 1)]);
    expect(result.skipped.map((s) => [s.reason, s.record.offset])).toEqual([['unreadable batch', '2']]);
  });

  it('waits for a decoding that needs the registry first', async () => {
    const result = await run([record(0, 'A', 'up:1'), record(1, 'A', 'bad'), record(2, 'B', 'up:4')], {
      async: true,
    });
    expect(result.events).toEqual([upsert('A', 1), upsert('B', 4)]);
    expect(result.skipped.map((s) => s.reason)).toEqual(['undecodable']);
  });

  it('throws a registry outage instead of skipping the record', async () => {
    await expect(run([record(0, 'A', 'up:1'), record(1, 'A', 'registry down')])).rejects.toThrow(
      SchemaRegistryError,
    );
  });
});
