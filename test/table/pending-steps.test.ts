import { describe, expect, it } from 'vitest';
import type { AlertEvent } from '../../src/alert-events.ts';
import { DecodeError, SchemaRegistryError } from '../../src/errors.ts';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { holdStep, PendingSteps, type SkippedRecord } from '../../src/table/pending-steps.ts';
import { alertState } from './alerts.ts';

const upsert = (iban: string, n: number): AlertEvent => ({
  type: 'AlertUpserted',
  iban,
  alert: alertState(iban, n),
});
const tombstone = (iban: string): AlertEvent => ({ type: 'Tombstone', iban, alert: null });

/**
 * A record whose value names what the fake decoder makes of it: `up:<n>` an upsert numbered n, `off`
 * a deactivation, `bad` undecodable, `registry down` a registry outage; a null value is a tombstone.
 */
const record = (offset: number, key: string, value: string | null, partition = 0): IncomingRecord => ({
  topic: 'alerts',
  partition,
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

function fakeDecode({ async = false } = {}) {
  return (r: IncomingRecord): AlertEvent | Promise<AlertEvent> => {
    const iban = r.key?.toString('utf8') ?? '';
    const value = r.value?.toString('utf8') ?? null;
    const event = (): AlertEvent => {
      if (value === null) return tombstone(iban);
      if (value === 'off') return { type: 'AlertDeactivated', iban, alert: null };
      if (value === 'bad') throw new DecodeError(`offset ${r.offset} cannot be decoded`);
      if (value === 'registry down') throw new SchemaRegistryError('the registry is out of reach');
      return upsert(iban, Number(value.slice('up:'.length)));
    };
    return async ? Promise.resolve().then(event) : event();
  };
}

async function hold(steps: IncomingRecord[][], options?: { async?: boolean }) {
  const pending = new PendingSteps();
  const skipped: SkippedRecord[] = [];
  const events: number[] = [];
  for (const step of steps) {
    events.push((await holdStep(pending, step, fakeDecode(options), (s) => skipped.push(s))).events);
  }
  return { pending, events, skipped };
}

describe('steps held before they are written', () => {
  it("keeps each IBAN's newest event across steps and each partition's furthest position", async () => {
    const { pending, events } = await hold([
      [record(0, 'A', 'up:1'), record(1, 'B', 'up:1'), record(2, 'A', 'up:2')],
      [record(0, 'C', 'up:1', 1)],
      [record(3, 'B', 'off'), record(4, 'A', null), record(5, 'D', 'up:1')],
    ]);

    expect(events).toEqual([3, 1, 3]);
    expect(pending.ibans).toBe(4);
    expect(pending.drain()).toEqual({
      offsets: new Map([
        [0, 6n],
        [1, 1n],
      ]),
      events: [
        tombstone('A'),
        { type: 'AlertDeactivated', iban: 'B', alert: null },
        upsert('C', 1),
        upsert('D', 1),
      ],
    });
  });

  it('keeps the previous event of an IBAN whose later record is undecodable, and reports the skip', async () => {
    const { pending, events, skipped } = await hold([
      [record(0, 'A', 'up:1'), record(1, 'A', 'up:2')],
      [record(2, 'A', 'bad'), record(3, 'B', 'bad')],
    ]);

    expect(events).toEqual([2, 0]);
    expect(skipped.map((s) => [s.reason, s.record.offset])).toEqual([
      ['undecodable', '2'],
      ['undecodable', '3'],
    ]);
    expect(pending.drain()).toEqual({ offsets: new Map([[0, 4n]]), events: [upsert('A', 2)] });
  });

  it('sets an unreadable batch aside and holds the position past it', async () => {
    const { pending, skipped } = await hold([[record(0, 'A', 'up:1'), unreadable(2)]]);

    expect(skipped.map((s) => [s.reason, s.record.offset])).toEqual([['unreadable batch', '2']]);
    expect(pending.drain()).toEqual({ offsets: new Map([[0, 3n]]), events: [upsert('A', 1)] });
  });

  it('holds a step whose records are all set aside, for its position', async () => {
    const { pending } = await hold([[record(7, 'A', 'bad')]]);

    expect(pending.empty).toBe(false);
    expect(pending.ibans).toBe(0);
    expect(pending.drain()).toEqual({ offsets: new Map([[0, 8n]]), events: [] });
    expect(pending.empty).toBe(true);
  });

  it('waits for a decoding that needs the registry first', async () => {
    const { pending, skipped } = await hold(
      [[record(0, 'A', 'up:1'), record(1, 'A', 'bad'), record(2, 'B', 'up:4')]],
      {
        async: true,
      },
    );

    expect(skipped.map((s) => s.reason)).toEqual(['undecodable']);
    expect(pending.drain().events).toEqual([upsert('A', 1), upsert('B', 4)]);
  });

  it('rejects on a registry outage instead of skipping the record, holding nothing of the step', async () => {
    const pending = new PendingSteps();
    await holdStep(pending, [record(0, 'A', 'up:1')], fakeDecode(), () => {});
    const step = [record(1, 'B', 'up:1'), record(2, 'A', 'up:2'), record(3, 'A', 'registry down')];

    await expect(holdStep(pending, step, fakeDecode(), () => {})).rejects.toThrow(SchemaRegistryError);
    expect(pending.drain()).toEqual({ offsets: new Map([[0, 1n]]), events: [upsert('A', 1)] });
  });

  it('dates what it holds from the first step added after a drain', async () => {
    let now = 1000;
    const pending = new PendingSteps(() => now);
    await holdStep(pending, [record(0, 'A', 'up:1')], fakeDecode(), () => {});
    now = 2000;
    await holdStep(pending, [record(1, 'B', 'up:1')], fakeDecode(), () => {});
    expect(pending.since).toBe(1000);

    pending.drain();
    now = 3000;
    await holdStep(pending, [record(2, 'C', 'up:1')], fakeDecode(), () => {});
    expect(pending.since).toBe(3000);
  });
});
