import { describe, expect, it } from 'vitest';
import {
  eventValue,
  KIND_DEACTIVATED,
  KIND_REJECTED,
  KIND_UPSERTED,
  preparePage,
  transferablesOf,
} from '../../src/connector/prepare.ts';
import { fingerprintOf, mapRow, rowFingerprintOf } from '../../src/connector/rows.ts';
import { avroTypeOf } from '../../src/kafka/avro-encoder.ts';
import { unframe } from '../../src/kafka/wire-format.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { testEncoders } from './encoders.ts';

const row = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  iban: 'DE89 3704 0044 0532 0130 00',
  bic: null,
  qualification: 'PENDING',
  reportsCount: 1,
  updatedAt: '2026-11-22T09:30:00.000Z',
  isActive: true,
  ...over,
});
const observedAt = 1_795_339_900_000;
const upserted = avroTypeOf(loadSchema(SchemaNames.AlertUpserted));
const deactivated = avroTypeOf(loadSchema(SchemaNames.AlertDeactivated));

describe('preparePage', () => {
  it('keeps feed order in kinds, one column entry per event, and each packed value decodes to the mapped event', () => {
    const rows = [row('a'), row('bad', { isActive: 'yes' }), row('b', { isActive: false }), 42];
    const page = preparePage(rows, 'c-2', observedAt, testEncoders());
    expect([...page.kinds]).toEqual([KIND_UPSERTED, KIND_REJECTED, KIND_DEACTIVATED, KIND_REJECTED]);
    expect(page.nextCursor).toBe('c-2');
    expect(page.alertIds).toEqual(['a', 'b']);
    expect(page.keys).toEqual(['DE89370400440532013000', 'DE89370400440532013000']);
    const expected = [rows[0], rows[2]].map((r) => {
      const mapped = mapRow(r, observedAt);
      if (!mapped.ok) throw new Error('test rows must map');
      return mapped.event;
    });
    expect(page.eventIds).toEqual(expected.map((e) => e.eventId));
    expect(page.rowFingerprints).toEqual(expected.map(rowFingerprintOf));
    expect([...page.updatedAt]).toEqual(expected.map((e) => e.updatedAt));
    const first = unframe(eventValue(page, 0));
    const second = unframe(eventValue(page, 1));
    expect(first.schemaId).toBe(101);
    expect(second.schemaId).toBe(102);
    expect(upserted.fromBuffer(first.body)).toEqual(expected[0]);
    expect(deactivated.fromBuffer(second.body)).toEqual(expected[1]);
    expect(page.rejected.map((r) => [r.code, r.id, r.raw])).toEqual([
      ['ROW_IS_ACTIVE_INVALID', 'bad', JSON.stringify(rows[1])],
      ['ROW_NOT_AN_OBJECT', null, '42'],
    ]);
    expect(page.rejected[0]).toMatchObject({
      updatedAt: Date.parse('2026-11-22T09:30:00.000Z'),
      fingerprint: fingerprintOf(JSON.stringify(rows[1])),
      observedAt,
    });
  });

  it('grows its value buffer when events outgrow the per-row estimate', () => {
    const long = 'Q'.repeat(2_000); // an unknown qualification is kept raw: a 2 kB value
    const rows = [row('a', { qualification: long }), row('b', { qualification: long }), row('c')];
    const page = preparePage(rows, null, observedAt, testEncoders());
    expect(page.ends[2]).toBeGreaterThan(4_000);
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      expect(upserted.fromBuffer(unframe(eventValue(page, i)).body)).toMatchObject({ alertId: id });
    }
    expect(upserted.fromBuffer(unframe(eventValue(page, 1)).body)).toMatchObject({ qualificationRaw: long });
  });

  it('an empty page has empty columns, and every transferable is a distinct buffer', () => {
    const page = preparePage([], null, observedAt, testEncoders());
    expect(page.kinds).toHaveLength(0);
    expect(page.values).toHaveLength(0);
    const buffers = transferablesOf(preparePage([row('a')], null, observedAt, testEncoders()));
    expect(new Set(buffers).size).toBe(buffers.length);
  });
});
