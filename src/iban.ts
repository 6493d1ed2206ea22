import { getCountrySpecifications, isValidIBAN } from 'ibantools';
import { LRUCache } from 'lru-cache';

const COMPACT_UPPER = /^[A-Z0-9]+$/;

/**
 * Removes spaces and upper-cases the letters a-z: the form used as Kafka key and in events. Other
 * letters stay as they are, for the check to refuse: toUpperCase() would turn some into A-Z (the long
 * s U+017F into S, the dotless i into I) and make an IBAN of them.
 */
export function normalizeIban(raw: string): string {
  // Most feeds already send the compact form: skip the rewrite then (hot path).
  return COMPACT_UPPER.test(raw) ? raw : raw.replace(/\s+/g, '').replace(/[a-z]+/g, (m) => m.toUpperCase());
}

/** The longest IBAN of any country (ISO 13616), in characters of its compact form. */
export const MAX_IBAN_LENGTH = 34;

/**
 * How many verdicts the IBAN check keeps, the least recently used dropped first: a feed or the
 * requesters' traffic sees the same IBANs again and again, and any number of distinct ones.
 */
export const IBAN_VERDICT_CACHE_MAX = 10_000;

// ibantools builds a RegExp per call (~7 µs): verdicts are cached, never for a string longer than an
// IBAN can be (refused without a look).
const verdicts = new LRUCache<string, boolean>({ max: IBAN_VERDICT_CACHE_MAX });

/** ISO 13616 shape for the country plus the mod-97 check, on the normalised form. */
export function isValidNormalizedIban(iban: string): boolean {
  if (iban.length > MAX_IBAN_LENGTH) return false;
  let verdict = verdicts.get(iban);
  if (verdict === undefined) {
    verdict = isValidIBAN(iban);
    verdicts.set(iban, verdict);
  }
  return verdict;
}

/** How many IBAN verdicts are cached now (at most IBAN_VERDICT_CACHE_MAX). */
export function cachedIbanVerdicts(): number {
  return verdicts.size;
}

const countries = getCountrySpecifications();

/** The length of an IBAN of `country` (two upper-case letters), per ibantools' registry; undefined for a country without IBANs. */
export function ibanLength(country: string): number | undefined {
  return countries[country]?.chars ?? undefined;
}
