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
