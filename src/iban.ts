import { getCountrySpecifications, isValidIBAN } from 'ibantools';

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

// ibantools builds a RegExp per call (~7 µs); a live feed sees the same IBANs again and again.
const verdicts = new Map<string, boolean>();
const MAX_CACHED = 100_000;

/** ISO 13616 shape for the country plus the mod-97 check, on the normalised form. */
export function isValidNormalizedIban(iban: string): boolean {
  let verdict = verdicts.get(iban);
  if (verdict === undefined) {
    verdict = isValidIBAN(iban);
    if (verdicts.size >= MAX_CACHED) verdicts.clear();
    verdicts.set(iban, verdict);
  }
  return verdict;
}

const countries = getCountrySpecifications();

/** The length of an IBAN of `country` (two upper-case letters), per ibantools' registry; undefined for a country without IBANs. */
export function ibanLength(country: string): number | undefined {
  return countries[country]?.chars ?? undefined;
}
