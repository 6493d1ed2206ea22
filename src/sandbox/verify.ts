import { isValidIBAN } from 'ibantools';
import { holderNameFor, REACHABLE_COUNTRIES } from './data.ts';
import { json, problem, type Reply } from './reply.ts';

export type Match =
  | { partyNameMatch: 'MTCH' | 'NMTC' | 'NOAP' }
  | { partyNameMatch: 'CMTC'; matchedName: string };

/** Lower case, accents and apostrophes removed (O'Brien = OBrien), other punctuation a space, single spaces. */
export const normaliseName = (name: string) =>
  name
    .normalize('NFD')
    .replace(/\p{Diacritic}/gu, '')
    .replace(/['’]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N} ]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/**
 * The sandbox's Verification of Payee rule, documented in README.md:
 * - NOAP when the IBAN's country is outside the reachable set (the euro area);
 * - MTCH when the name equals the holder's, ignoring case, accents, punctuation and spacing;
 * - CMTC (with the holder's name) when the same words come in another order, the middle name is
 *   missing, or at most two letters differ;
 * - NMTC otherwise.
 */
export function matchName(iban: string, name: string, holder: string): Match {
  if (!REACHABLE_COUNTRIES.has(iban.slice(0, 2))) return { partyNameMatch: 'NOAP' };
  const asked = normaliseName(name);
  const known = normaliseName(holder);
  if (asked === known) return { partyNameMatch: 'MTCH' };
  const askedWords = asked.split(' ');
  const knownWords = known.split(' ');
  const sameWords = [...askedWords].sort().join(' ') === [...knownWords].sort().join(' ');
  // One middle word left out, first and last kept: "Anna Weber" for "Anna Maria Weber".
  const missingMiddle =
    knownWords.length >= 3 &&
    askedWords.length === knownWords.length - 1 &&
    askedWords[0] === knownWords[0] &&
    askedWords.at(-1) === knownWords.at(-1) &&
    knownWords.some(
      (_, k) => k > 0 && k < knownWords.length - 1 && knownWords.toSpliced(k, 1).join(' ') === asked,
    );
  if (sameWords || missingMiddle || editDistance(asked, known) <= 2) {
    return { partyNameMatch: 'CMTC', matchedName: holder };
  }
  return { partyNameMatch: 'NMTC' };
}

/** POST /vop/v1/verify: `{"iban","party":{"name"}}`; 400 for anything else or an invalid IBAN. */
export function verify(body: unknown): Reply {
  const b = body as { iban?: unknown; party?: unknown } | null;
  if (typeof b !== 'object' || b === null || Array.isArray(b))
    return problem(400, 'INVALID_BODY', 'body must be a JSON object');
  if (typeof b.iban !== 'string' || b.iban.trim() === '')
    return problem(400, 'INVALID_BODY', 'iban must be a non-empty string');
  const party = b.party as { name?: unknown } | null;
  if (typeof party !== 'object' || party === null || Array.isArray(party))
    return problem(400, 'INVALID_BODY', 'party must be an object');
  if (typeof party.name !== 'string' || party.name.trim() === '')
    return problem(400, 'INVALID_BODY', 'party.name must be a non-empty string');
  const iban = b.iban.replace(/\s+/g, '').toUpperCase();
  if (!isValidIBAN(iban)) return problem(400, 'INVALID_IBAN', 'iban is not a valid IBAN');
  return json(200, matchName(iban, party.name, holderNameFor(iban)));
}
