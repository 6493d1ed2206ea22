import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  deepJson,
  eventIdOf,
  MAX_ALERT_ID_CHARS,
  MAX_ROW_DEPTH,
  mapRow,
  nestedDeeperThan,
  RowErrorCodes,
  rowText,
} from '../../src/connector/rows.ts';

const good = {
  id: 'a-1',
  iban: 'de89 3704 0044 0532 0130 00',
  bic: 'COBADEFFXXX',
  qualification: 'CONFIRMED',
  reportsCount: 3,
  updatedAt: '2026-11-22T09:30:00.123Z',
  isActive: true,
};
const observedAt = 1_795_339_900_000;

describe('mapRow', () => {
  it('turns an active row into an AlertUpserted keyed by the normalised IBAN', () => {
    const mapped = mapRow(good, observedAt);
    expect(mapped).toEqual({
      ok: true,
      type: 'AlertUpserted',
      event: {
        eventId: createHash('sha256').update('a-1|1795339800123|true').digest('hex'),
        alertId: 'a-1',
        iban: 'DE89370400440532013000',
        bic: 'COBADEFFXXX',
        qualification: 'CONFIRMED',
        qualificationRaw: null,
        reportsCount: 3,
        updatedAt: 1795339800123,
        observedAt,
      },
    });
  });

  it('turns an inactive row into an AlertDeactivated', () => {
    const mapped = mapRow({ ...good, isActive: false }, observedAt);
    expect(mapped.ok && mapped.type).toBe('AlertDeactivated');
  });

  it('gives the same event id whether updatedAt came as ISO-8601 or epoch ms, and ids as numbers', () => {
    const iso = mapRow({ ...good, id: 42 }, observedAt);
    const epoch = mapRow({ ...good, id: '42', updatedAt: 1795339800123 }, observedAt);
    expect(iso.ok && epoch.ok).toBe(true);
    if (iso.ok && epoch.ok) {
      expect(iso.event.eventId).toBe(epoch.event.eventId);
      expect(iso.event.alertId).toBe('42');
    }
  });

  it('rejects a numeric id beyond 2^53 - 1, which JSON.parse rounded, rather than publish it under another alert id', () => {
    // Regression: 9007199254740993 was read as 9007199254740992, an alert id another row may carry.
    for (const text of ['9007199254740993', '9007199254740992', '-9007199254740993', '1e300']) {
      const row = JSON.parse(`{"id":${text}}`) as { id: number };
      const mapped = mapRow({ ...good, id: row.id }, observedAt);
      expect(mapped).toMatchObject({ ok: false, code: RowErrorCodes.ID_UNSAFE_NUMBER, id: null });
      expect(!mapped.ok && mapped.message).toMatch(/beyond 2\^53 - 1.*send it as a string/);
    }
    const largest = mapRow({ ...good, id: Number.MAX_SAFE_INTEGER }, observedAt);
    expect(largest.ok && largest.event.alertId).toBe('9007199254740991');
  });

  it('maps an unknown qualification to UNKNOWN and keeps the raw value', () => {
    const mapped = mapRow({ ...good, qualification: 'ESCALATED' }, observedAt);
    expect(mapped.ok && mapped.event).toMatchObject({
      qualification: 'UNKNOWN',
      qualificationRaw: 'ESCALATED',
    });
    const missing = mapRow({ ...good, qualification: undefined }, observedAt);
    expect(missing.ok && missing.event).toMatchObject({ qualification: 'UNKNOWN', qualificationRaw: null });
  });

  it('accepts a missing or null bic', () => {
    const mapped = mapRow({ ...good, bic: null }, observedAt);
    expect(mapped.ok && mapped.event.bic).toBeNull();
  });

  const rejections: [string, Record<string, unknown>, string][] = [
    ['a missing id', { ...good, id: undefined }, RowErrorCodes.ID_MISSING],
    ['an empty id', { ...good, id: '  ' }, RowErrorCodes.ID_MISSING],
    ['a missing IBAN', { ...good, iban: undefined }, RowErrorCodes.IBAN_MISSING],
    ['an IBAN with a bad checksum', { ...good, iban: 'DE88370400440532013000' }, RowErrorCodes.IBAN_INVALID],
    ['an IBAN of the wrong shape', { ...good, iban: 'DE89-3704' }, RowErrorCodes.IBAN_INVALID],
    [
      // U+017F LATIN SMALL LETTER LONG S upper-cases to an ASCII S: 'GB82WEST12345698765432' is valid.
      'an IBAN with a letter outside A-Z that upper-cases into it',
      { ...good, iban: 'GB82 WE\u017FT 1234 5698 7654 32' },
      RowErrorCodes.IBAN_INVALID,
    ],
    [
      'an updatedAt that is not an instant',
      { ...good, updatedAt: 'yesterday' },
      RowErrorCodes.UPDATED_AT_INVALID,
    ],
    ['a date without time and zone', { ...good, updatedAt: '2026-11-22' }, RowErrorCodes.UPDATED_AT_INVALID],
    [
      'a day February does not have',
      { ...good, updatedAt: '2026-02-31T00:00:00Z' },
      RowErrorCodes.UPDATED_AT_INVALID,
    ],
    ['a fractional epoch', { ...good, updatedAt: 17.5 }, RowErrorCodes.UPDATED_AT_INVALID],
    [
      'an epoch past year 9999 (beyond a Date at 8.64e15)',
      { ...good, updatedAt: 9_000_000_000_000_000 },
      RowErrorCodes.UPDATED_AT_INVALID,
    ],
    ['isActive as a string', { ...good, isActive: 'yes' }, RowErrorCodes.IS_ACTIVE_INVALID],
    ['a negative reportsCount', { ...good, reportsCount: -1 }, RowErrorCodes.REPORTS_COUNT_INVALID],
    ['a fractional reportsCount', { ...good, reportsCount: 3.5 }, RowErrorCodes.REPORTS_COUNT_INVALID],
    ['a reportsCount past 2^31-1', { ...good, reportsCount: 2 ** 31 }, RowErrorCodes.REPORTS_COUNT_INVALID],
    ['a bic that is not a string', { ...good, bic: 7 }, RowErrorCodes.BIC_INVALID],
  ];
  for (const [what, row, code] of rejections) {
    it(`rejects ${what} with ${code}`, () => {
      const mapped = mapRow(row, observedAt);
      expect(mapped.ok).toBe(false);
      if (!mapped.ok) expect(mapped.code).toBe(code);
    });
  }

  it('rejects a row that is not an object', () => {
    expect(mapRow([1, 2], observedAt)).toMatchObject({
      ok: false,
      code: RowErrorCodes.NOT_AN_OBJECT,
      id: null,
    });
  });

  it('keeps the id and position of a rejected row where they can be read', () => {
    expect(mapRow({ ...good, isActive: 1 }, observedAt)).toMatchObject({
      ok: false,
      id: 'a-1',
      updatedAt: 1795339800123,
    });
  });
});

describe('eventIdOf', () => {
  it('is the lowercase hex SHA-256 of id|epoch ms|isActive', () => {
    expect(eventIdOf('x', 5, false)).toBe(createHash('sha256').update('x|5|false').digest('hex'));
    expect(eventIdOf('x', 5, false)).toMatch(/^[0-9a-f]{64}$/);
  });
});

/** `levels` arrays nested in one another: `[[[...]]]`, parsed from text as the feed's rows are. */
const nested = (levels: number): unknown => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);

describe('rows too deep for JSON.stringify', () => {
  it('measures nesting without recursion, at any depth, counting the value itself as level 1', () => {
    expect(nestedDeeperThan(nested(20_000), MAX_ROW_DEPTH)).toBe(true);
    expect(nestedDeeperThan({ a: { b: [1, { c: [] }] } }, 5)).toBe(false);
    expect(nestedDeeperThan({ a: { b: [1, { c: [] }] } }, 4)).toBe(true);
    expect(nestedDeeperThan({ a: 1, b: 'x', c: null }, 1)).toBe(false);
    expect(nestedDeeperThan('text', 0)).toBe(false);
  });

  it('writes the same JSON text as JSON.stringify, also where JSON.stringify throws RangeError', () => {
    const values = [{ a: 1, b: [1, 'two\n', { c: null }], d: { e: true } }, [], {}, null, 3, 'é', [[], [{}]]];
    for (const value of values) expect(deepJson(value)).toBe(JSON.stringify(value));
    const deepText = `{"id":"a","q":${'['.repeat(20_000)}{"k":"v"}${']'.repeat(20_000)}}`;
    const deep = JSON.parse(deepText);
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(deepJson(deep)).toBe(deepText);
    expect(rowText(deep, RowErrorCodes.TOO_DEEP)).toBe(deepText);
  });

  it('rejects a row nested deeper than MAX_ROW_DEPTH as ROW_TOO_DEEP, keeping its id and updatedAt', () => {
    const row = { ...good, qualification: nested(20_000) };
    expect(mapRow(row, observedAt)).toEqual({
      ok: false,
      code: 'ROW_TOO_DEEP',
      message: `row nests objects and arrays deeper than ${MAX_ROW_DEPTH} levels`,
      id: 'a-1',
      updatedAt: Date.parse(good.updatedAt),
    });
    expect(mapRow(nested(MAX_ROW_DEPTH + 1), observedAt)).toMatchObject({ code: 'ROW_TOO_DEEP', id: null });
    expect(mapRow({ ...good, extra: nested(MAX_ROW_DEPTH - 1) }, observedAt).ok).toBe(true);
  });
});

describe('fields of absurd size', () => {
  it('rejects an id longer than MAX_ALERT_ID_CHARS as ROW_TOO_LARGE, and takes one of that length', () => {
    const long = 'i'.repeat(MAX_ALERT_ID_CHARS + 1);
    expect(mapRow({ ...good, id: long }, observedAt)).toMatchObject({
      ok: false,
      code: 'ROW_TOO_LARGE',
      id: long,
    });
    expect(mapRow({ ...good, id: long.slice(1) }, observedAt).ok).toBe(true);
  });
});
