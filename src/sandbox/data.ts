import { hashString, pick, prng, type Rand } from './prng.ts';

/** A participant of the fraud-report database; tenants are the ones holding a sandbox API key. */
export interface Institution {
  index: number;
  id: string;
  name: string;
  bic: string;
  country: string;
  apiKey?: string;
}

const TENANT_COUNTRIES = ['DE', 'NL', 'AT', 'BE', 'IT', 'IE', 'FI', 'LU'];
const EXTERNALS = [
  { name: 'Nordbank Hamburg', country: 'DE' },
  { name: 'Rabo Noord', country: 'NL' },
  { name: 'Alpenländische Sparkasse', country: 'AT' },
  { name: 'Banque Wallonne', country: 'BE' },
  { name: 'Thames Mutual', country: 'GB' },
  { name: 'Banque Léman', country: 'CH' },
];
/** Tenants and externals share one 32-bit author mask per alert. */
export const MAX_TENANTS = 32 - EXTERNALS.length;

const letters = (rand: Rand, n: number) =>
  String.fromCharCode(...Array.from({ length: n }, () => 65 + Math.floor(rand() * 26)));

export function makeInstitutions(apiKeys: readonly string[], seed: number): Institution[] {
  const rand = prng(seed ^ 0x5bd1e995);
  const tenants = apiKeys.map((apiKey, i) => {
    const country = TENANT_COUNTRIES[i % TENANT_COUNTRIES.length] as string;
    const id = `PSP${String(i + 1).padStart(3, '0')}`;
    return {
      index: i,
      id,
      name: `Sandbox PSP ${i + 1}`,
      bic: `${letters(rand, 4)}${country}2XXXX`,
      country,
      apiKey,
    };
  });
  const externals = EXTERNALS.map((e, i) => ({
    index: tenants.length + i,
    id: `EXT${String(i + 1).padStart(3, '0')}`,
    name: e.name,
    bic: `${letters(rand, 4)}${e.country}22XXX`,
    country: e.country,
  }));
  return [...tenants, ...externals];
}

/** ISO 7064 mod 97-10 step: letters count as two digits (A = 10). */
const mod97Step = (r: number, c: number) => (c >= 65 ? (r * 100 + (c - 55)) % 97 : (r * 10 + (c - 48)) % 97);

/** BBAN shape of the countries in the data: leading bank letters (from the holder's BIC), then digits. */
const bbanShapes: Record<string, { letters: number; digits: number }> = {
  DE: { letters: 0, digits: 18 },
  AT: { letters: 0, digits: 16 },
  NL: { letters: 4, digits: 10 },
  BE: { letters: 0, digits: 10 }, // + two national check digits
  IT: { letters: 1, digits: 22 },
  IE: { letters: 4, digits: 14 },
  FI: { letters: 0, digits: 14 },
  LU: { letters: 0, digits: 16 },
  GB: { letters: 4, digits: 14 },
  CH: { letters: 0, digits: 17 },
};

/**
 * A valid IBAN (ISO 13616 shape and mod-97 check digits) of the given country, built from
 * character codes in one go: a string grown piece by piece stays a rope in V8, costing several
 * times its length, and this runs a million times when the sandbox seeds a large feed.
 */
export function makeIban(country: string, bank: string, rand: Rand): string {
  const shape = bbanShapes[country];
  if (!shape) throw new RangeError(`no IBAN maker for ${country}`);
  const codes = [country.charCodeAt(0), country.charCodeAt(1), 48, 48];
  for (let k = 0; k < shape.letters; k++) codes.push(bank.charCodeAt(k));
  for (let k = 0; k < shape.digits; k++) codes.push(48 + Math.floor(rand() * 10));
  if (country === 'BE') {
    // Belgian national check: the last two digits are the first ten mod 97 (97 when 0).
    let r = 0;
    for (let k = 4; k < codes.length; k++) r = mod97Step(r, codes[k] as number);
    const check = r || 97;
    codes.push(48 + Math.floor(check / 10), 48 + (check % 10));
  }
  let r = 0;
  for (let k = 4; k < codes.length; k++) r = mod97Step(r, codes[k] as number);
  for (let k = 0; k < 4; k++) r = mod97Step(r, codes[k] as number);
  const check = 98 - r;
  codes[2] = 48 + Math.floor(check / 10);
  codes[3] = 48 + (check % 10);
  return String.fromCharCode(...codes);
}

const FIRST = [
  'Anna',
  'Lukas',
  'Marie',
  'Jan',
  'Sofia',
  'Pieter',
  'Elena',
  'Mikko',
  'Claire',
  'Seán',
  'Léa',
  'Tomás',
  'Émilie',
  'Jürgen',
  'Giulia',
  'Noah',
];
const MIDDLE = ['Maria', 'Johannes', 'Louise', 'Josef', 'Anne'];
const LAST = [
  'Schmidt',
  'Janssen',
  'Virtanen',
  'Murphy',
  'Huber',
  'Müller',
  'Dubois',
  'Weber',
  'Bakker',
  'Schneider',
  'Peeters',
  'Rossi',
  'Lefèvre',
  "O'Brien",
  'Korhonen',
  'Hoffmann',
];

/**
 * The account holder's name for any IBAN, derived from the IBAN itself: so seeded alerts and IBANs
 * the data never mentions both have one, and tests can predict verification outcomes.
 */
export function holderNameFor(iban: string): string {
  const rand = prng(hashString(iban.replace(/\s+/g, '').toUpperCase()));
  const first = pick(rand, FIRST);
  const last = pick(rand, LAST);
  return rand() < 0.25 ? `${first} ${pick(rand, MIDDLE)} ${last}` : `${first} ${last}`;
}

/** Countries whose PSPs the sandbox's verification scheme reaches (the euro area); others get NOAP. */
export const REACHABLE_COUNTRIES: ReadonlySet<string> = new Set([
  'AT',
  'BE',
  'CY',
  'DE',
  'EE',
  'ES',
  'FI',
  'FR',
  'GR',
  'HR',
  'IE',
  'IT',
  'LT',
  'LU',
  'LV',
  'MT',
  'NL',
  'PT',
  'SI',
  'SK',
]);
