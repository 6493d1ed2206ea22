import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { instant } from '../../src/cli/options.ts';

describe('instant option', () => {
  it('normalises an ISO-8601 instant with its zone to UTC milliseconds', () => {
    expect(instant('2026-01-01T02:00:00.123456+02:00')).toBe('2026-01-01T00:00:00.123Z');
    expect(instant('2026-01-01T00:00:00Z')).toBe('2026-01-01T00:00:00.000Z');
  });

  it.each([
    ['a bare number', '5'],
    ['a month and day', 'March 5'],
    ['a US date', '11/22/2026'],
    ['a local time without a zone', '2026-01-01T00:00:00'],
    ['a day February does not have', '2026-02-31T00:00:00Z'],
    ['hour 25', '2026-01-01T25:00:00Z'],
  ])('refuses %s', (_what, value) => {
    expect(() => instant(value)).toThrow(InvalidArgumentError);
    expect(() => instant(value)).toThrow(`"${value}" is not a valid ISO-8601 instant`);
  });
});
