/** Date, time (seconds and fraction optional) and a zone: `Z`, `±hh:mm` or `±hhmm`. */
const INSTANT = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/i;

/** The first and last instants with a four-digit year, 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
export const MIN_INSTANT = -62_167_219_200_000;
/** Beyond it `toISOString()` writes an expanded year (`+010000-…`) no upstream reads, and past 8.64e15 throws. */
export const MAX_INSTANT = 253_402_300_799_999;

/**
 * An instant as epoch ms: an ISO-8601 date-time with its zone (sub-millisecond digits truncated), or
 * non-negative integer epoch milliseconds as a JSON number, up to `MAX_INSTANT`. Anything else is null:
 * no zone, a date that does not exist (February 31, month 13, hour 24), or what only V8's lenient
 * `Date.parse` reads (`"1"`, `"Jan 5"`). The one parser of config, CLI options and feed rows.
 */
export function parseInstant(value: unknown): number | null {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value >= 0 && value <= MAX_INSTANT ? value : null;
  }
  if (typeof value !== 'string') return null;
  const m = INSTANT.exec(value);
  if (m === null) return null;
  const [, date, hhmm, ss = '00', fraction = '', sign, offsetH = '0', offsetM = '0'] = m;
  // Read in the one format ECMAScript defines, then written back: Date.parse rolls a field out of its
  // calendar range over (February 31 to March 3), and the round trip shows that.
  const local = `${date}T${hhmm}:${ss}`;
  const utc = Date.parse(`${local}Z`);
  if (Number.isNaN(utc) || new Date(utc).toISOString().slice(0, 19) !== local) return null;
  if (Number(offsetH) > 23 || Number(offsetM) > 59) return null;
  const offsetMs = (Number(offsetH) * 60 + Number(offsetM)) * 60_000 * (sign === '-' ? -1 : 1);
  const ms = utc + Number(fraction.slice(0, 3).padEnd(3, '0')) - offsetMs;
  return ms >= MIN_INSTANT && ms <= MAX_INSTANT ? ms : null;
}
