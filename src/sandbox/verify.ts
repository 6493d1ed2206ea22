import { isValidIBAN } from 'ibantools';
import { SEPA_COUNTRIES } from './data.ts';

export type Match =
  | { partyNameMatch: 'MTCH' | 'NMTC' | 'NOAP' }
  | { partyNameMatch: 'CMTC'; matchedName: string };

const normalise = (name: string) =>
  name
    .normalize('NFD')
    .replace(/\p{Diacritic}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N} ]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j] as number;
      row[j] = Math.min(
        (row[j] as number) + 1,
        (row[j - 1] as number) + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      prev = tmp;
    }
  }
  return row[b.length] as number;
}

/**
 * The sandbox's documented Verification of Payee rule:
 * - NOAP when the IBAN's country is outside the reachable set (DE AT NL LU IE FI);
 * - MTCH when the name equals the holder's, ignoring case, accents, punctuation and spacing;
 * - CMTC (with the holder's name) when the words are the same in another order, a middle name is
 *   missing, or at most two letters differ;
 * - NMTC otherwise.
 */
export function matchName(iban: string, name: string, holder: string): Match {
  if (!isValidIBAN(iban) || !SEPA_COUNTRIES.includes(iban.slice(0, 2))) return { partyNameMatch: 'NOAP' };
  const asked = normalise(name);
  const known = normalise(holder);
  if (asked === known) return { partyNameMatch: 'MTCH' };
  const askedWords = asked.split(' ');
  const knownWords = known.split(' ');
  const sameWords = [...askedWords].sort().join(' ') === [...knownWords].sort().join(' ');
  const missingMiddle =
    knownWords.length === 3 &&
    askedWords.length === 2 &&
    askedWords[0] === knownWords[0] &&
    askedWords[1] === knownWords[2];
  if (sameWords || missingMiddle || editDistance(asked, known) <= 2) {
    return { partyNameMatch: 'CMTC', matchedName: holder };
  }
  return { partyNameMatch: 'NMTC' };
}
