import { describe, expect, it } from 'vitest';
import {
  eventRecord,
  eventValue,
  KIND_DEACTIVATED,
  KIND_REJECTED,
  KIND_UPSERTED,
  preparePage,
  transferablesOf,
} from '../../src/connector/prepare.ts';
import { fingerprintOf, mapRow, rowFingerprintOf } from '../../src/connector/rows.ts';
import { avroTypeOf } from '../../src/kafka/avro-encoder.ts';
import { batchBytes } from '../../src/kafka/records.ts';
import { unframe } from '../../src/kafka/wire-format.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { testEncoders } from './encoders.ts';
import { exportRow as row } from './export-row.ts';

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

  it('rejects a row whose event is larger than eventMaxBytes as ROW_TOO_LARGE, and packs the next event where it would have gone', () => {
    const huge = 'B'.repeat(200_000);
    const rows = [row('a'), row('big', { bic: huge }), row('c')];
    const page = preparePage(rows, null, observedAt, testEncoders(), { eventMaxBytes: 100_000 });
    expect([...page.kinds]).toEqual([KIND_UPSERTED, KIND_REJECTED, KIND_UPSERTED]);
    expect(page.alertIds).toEqual(['a', 'c']);
    expect(upserted.fromBuffer(unframe(eventValue(page, 1)).body)).toMatchObject({ alertId: 'c' });
    expect(page.values.length).toBeLessThan(1_000);
    const [rejected] = page.rejected;
    expect(rejected).toMatchObject({
      code: 'ROW_TOO_LARGE',
      id: 'big',
      updatedAt: Date.parse('2026-11-22T09:30:00.000Z'),
      raw: JSON.stringify(rows[1]),
      fingerprint: fingerprintOf(JSON.stringify(rows[1])),
    });
    expect(rejected?.message).toMatch(/AlertUpserted event is 2\d{5} bytes, over .* \(100000\)/);
  });

  it('keeps an event that fits eventMaxBytes exactly, measured as the record the session sends', () => {
    const rows = [row('a', { bic: 'B'.repeat(5_000) })];
    const whole = preparePage(rows, null, observedAt, testEncoders());
    const bytes = batchBytes([
      eventRecord('t', {
        type: 'AlertUpserted',
        key: whole.keys[0] as string,
        value: eventValue(whole, 0),
        eventId: whole.eventIds[0] as string,
        alertId: 'a',
      }),
    ]);
    expect(preparePage(rows, null, observedAt, testEncoders(), { eventMaxBytes: bytes }).rejected).toEqual(
      [],
    );
    const cut = preparePage(rows, null, observedAt, testEncoders(), { eventMaxBytes: bytes - 1 });
    expect(cut.rejected.map((r) => r.code)).toEqual(['ROW_TOO_LARGE']);
  });

  it('sends a row too deep for JSON.stringify to the DLQ with its whole text and a fingerprint of it', () => {
    const deepText = `{"id":"deep","iban":"x","qualification":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const page = preparePage([JSON.parse(deepText), row('a')], null, observedAt, testEncoders());
    expect([...page.kinds]).toEqual([KIND_REJECTED, KIND_UPSERTED]);
    expect(page.rejected[0]).toMatchObject({
      code: 'ROW_TOO_DEEP',
      id: 'deep',
      raw: deepText,
      fingerprint: fingerprintOf(deepText),
    });
  });
});
