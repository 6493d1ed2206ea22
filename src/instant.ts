const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;

/**
 * The last instant with a four-digit year, 9999-12-31T23:59:59.999Z. Beyond it `toISOString()` writes
 * an expanded year (`+010000-…`) no upstream reads, and past 8.64e15 it throws.
 */
export const MAX_INSTANT = 253_402_300_799_999;

/**
 * An instant as epoch ms: an ISO-8601 date-time with its zone (sub-millisecond digits truncated), or
 * non-negative integer epoch milliseconds as a JSON number, up to `MAX_INSTANT`. Anything else is null.
 */
export function parseInstant(value: unknown): number | null {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value >= 0 && value <= MAX_INSTANT ? value : null;
  }
  if (typeof value !== 'string' || !INSTANT.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) || ms > MAX_INSTANT ? null : ms;
}
