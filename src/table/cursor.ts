import { InvalidInputError } from '../errors.ts';

/** Longer than any IBAN: a cursor naming a longer key was not made here. */
const MAX_KEY = 64;

/** The opaque paging cursor for "the IBANs after `iban`" (base64url of a small JSON object). */
export function encodeCursor(iban: string): string {
  return Buffer.from(JSON.stringify({ after: iban })).toString('base64url');
}

/** The IBAN a cursor of encodeCursor's names; InvalidInputError (INVALID_CURSOR) for anything else. */
export function decodeCursor(cursor: string): string {
  const invalid = () => new InvalidInputError('INVALID_CURSOR', 'cursor is not one this table gave');
  if (cursor.length > 4 * MAX_KEY) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const after = (parsed as { after?: unknown } | null)?.after;
  if (typeof after !== 'string' || after.length === 0 || after.length > MAX_KEY) throw invalid();
  return after;
}
