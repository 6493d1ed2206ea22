import { describe, expect, it } from 'vitest';
import { MAX_INSTANT, parseInstant } from '../src/instant.ts';

describe('parseInstant', () => {
  it('reads ISO-8601 instants with offsets and sub-millisecond digits', () => {
    expect(parseInstant('2026-11-22T11:30:00.123+02:00')).toBe(1795339800123);
    expect(parseInstant('2026-11-22T09:30:00.123456Z')).toBe(1795339800123);
  });

  it('refuses local times without a zone', () => {
    expect(parseInstant('2026-11-22T09:30:00')).toBeNull();
  });

  it('reads the zone as Z, ±hh:mm or ±hhmm, and a time without seconds', () => {
    expect(parseInstant('2026-11-22T09:30Z')).toBe(1795339800000);
    expect(parseInstant('2026-11-22T11:30:00+0200')).toBe(1795339800000);
    expect(parseInstant('2026-11-22T04:30:00-05:00')).toBe(1795339800000);
  });

  it('takes February 29 only in a leap year', () => {
    expect(parseInstant('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(parseInstant('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
    expect(parseInstant('2026-02-29T00:00:00Z')).toBeNull();
    expect(parseInstant('1900-02-29T00:00:00Z')).toBeNull();
  });

  it('reads years below 100 as themselves, not as 19xx', () => {
    expect(parseInstant('0050-03-01T12:00:00.5Z')).toBe(Date.parse('0050-03-01T12:00:00.500Z'));
    expect(parseInstant('0000-01-01T00:00:00Z')).toBe(Date.parse('0000-01-01T00:00:00Z'));
    expect(parseInstant('0004-02-29T00:00:00Z')).toBe(Date.parse('0004-02-29T00:00:00Z'));
  });

  it.each([
    ['a day February does not have', '2026-02-31T00:00:00Z'],
    ['April 31', '2026-04-31T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['month 0', '2026-00-10T00:00:00Z'],
    ['hour 24', '2026-01-01T24:00:00Z'],
    ['hour 25', '2026-01-01T25:00:00Z'],
    ['minute 60', '2026-01-01T00:60:00Z'],
    ['second 60', '2026-01-01T00:00:60Z'],
    ['an offset of 24 hours', '2026-01-01T00:00:00+24:00'],
    ['an offset in hours alone', '2026-01-01T00:00:00-05'],
    ['a bare number', '1'],
    ['a month and day', 'Jan 5'],
    ['a US date', '11/22/2026'],
    ['a date alone', '2026-11-22'],
    ['a string of epoch ms', '1795339800123'],
  ])('refuses %s', (_what, value) => {
    expect(parseInstant(value)).toBeNull();
  });

  it('reads epoch milliseconds up to 9999-12-31T23:59:59.999Z and refuses later ones', () => {
    expect(parseInstant(1795339800123)).toBe(1795339800123);
    expect(new Date(MAX_INSTANT).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(parseInstant(MAX_INSTANT)).toBe(MAX_INSTANT);
    expect(parseInstant(MAX_INSTANT + 1)).toBeNull();
    expect(parseInstant(8.64e15)).toBeNull();
    expect(parseInstant(9_000_000_000_000_000)).toBeNull();
  });

  it('refuses an ISO-8601 instant whose offset puts it past year 9999', () => {
    expect(parseInstant('9999-12-31T23:59:59.999Z')).toBe(MAX_INSTANT);
    expect(parseInstant('9999-12-31T23:00:00-02:00')).toBeNull();
  });
});
