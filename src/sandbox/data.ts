import { composeIBAN, isValidIBAN } from 'ibantools';

/** mulberry32: a tiny seeded PRNG, so a seed always yields the same data set and changes. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function hashString(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

const pick = <T>(rand: () => number, items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
const digits = (rand: () => number, n: number) =>
  Array.from({ length: n }, () => Math.floor(rand() * 10)).join('');
const letters = (rand: () => number, n: number) =>
  Array.from({ length: n }, () => String.fromCharCode(65 + Math.floor(rand() * 26))).join('');

/** Countries whose BBAN has no national check digit beyond the IBAN's own mod-97. */
const bbanMakers: Record<string, (rand: () => number) => string> = {
  DE: (r) => digits(r, 18),
  AT: (r) => digits(r, 16),
  NL: (r) => letters(r, 4) + digits(r, 10),
  LU: (r) => digits(r, 3) + digits(r, 13),
  IE: (r) => letters(r, 4) + digits(r, 14),
  FI: (r) => digits(r, 14),
};
export const SEPA_COUNTRIES = Object.keys(bbanMakers);

export function makeIban(rand: () => number): string {
  for (;;) {
    const countryCode = pick(rand, SEPA_COUNTRIES);
    const iban = composeIBAN({ countryCode, bban: bbanMakers[countryCode]?.(rand) ?? '' });
    if (iban && isValidIBAN(iban)) return iban;
  }
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
  'Sean',
  'Lea',
  'Tomas',
];
const MIDDLE = ['Maria', 'Johannes', 'Louise', 'Josef'];
const LAST = [
  'Schmidt',
  'Janssen',
  'Virtanen',
  'Murphy',
  'Huber',
  'Muller',
  'Dubois',
  'Weber',
  'Bakker',
  'Schneider',
];

/** A deterministic holder name; some carry a middle name so near-matches can be exercised. */
export function holderNameFor(iban: string): string {
  const rand = prng(hashString(iban));
  const first = pick(rand, FIRST);
  const last = pick(rand, LAST);
  return rand() < 0.25 ? `${first} ${pick(rand, MIDDLE)} ${last}` : `${first} ${last}`;
}

export const QUALIFICATIONS = ['PENDING', 'CONFIRMED', 'REJECTED', 'UNDER_INVESTIGATION'] as const;
export type Qualification = (typeof QUALIFICATIONS)[number];

export interface Institution {
  id: string;
  bic: string;
  /** The API key of this institution when it is a tenant. */
  apiKey?: string;
}

export interface Alert {
  index: number;
  id: string;
  /** Some alerts come with a numeric id and some with epoch-ms updatedAt, as SPEC §8 allows. */
  numericId: boolean;
  epochUpdatedAt: boolean;
  iban: string;
  bic: string;
  qualification: Qualification;
  reportsCount: number;
  sightingsCount: number;
  falsePositivesCount: number;
  updatedAt: number;
  isActive: boolean;
  holder: string;
  createdAt: number;
}

export function makeInstitutions(apiKeys: readonly string[], rand: () => number): Institution[] {
  const tenants = apiKeys.map((apiKey, i) => ({
    id: `PSP${String(i + 1).padStart(3, '0')}`,
    bic: `${letters(rand, 4)}DEFF`,
    apiKey,
  }));
  const others = Array.from({ length: 5 }, (_, i) => ({
    id: `EXT${String(i + 1).padStart(3, '0')}`,
    bic: `${letters(rand, 4)}NL2A`,
  }));
  return [...tenants, ...others];
}

export function makeAlert(index: number, rand: () => number, institutions: Institution[], at: number): Alert {
  const holder = pick(rand, institutions);
  return {
    index,
    id: index % 7 === 3 ? String(100000 + index) : `ALR-${String(index + 1).padStart(8, '0')}`,
    numericId: index % 7 === 3,
    epochUpdatedAt: index % 11 === 5,
    iban: makeIban(rand),
    bic: holder.bic,
    qualification: pick(rand, QUALIFICATIONS),
    reportsCount: 1 + Math.floor(rand() * 4),
    sightingsCount: Math.floor(rand() * 6),
    falsePositivesCount: Math.floor(rand() * 2),
    updatedAt: at,
    isActive: rand() > 0.1,
    holder: holder.id,
    createdAt: at,
  };
}

/** The seven fields of an export row, exactly (service interface), as JSON. */
export function exportRowJson(alert: Alert): string {
  return JSON.stringify({
    id: alert.numericId ? Number(alert.id) : alert.id,
    iban: alert.iban,
    bic: alert.bic,
    qualification: alert.qualification,
    reportsCount: alert.reportsCount,
    updatedAt: alert.epochUpdatedAt ? alert.updatedAt : new Date(alert.updatedAt).toISOString(),
    isActive: alert.isActive,
  });
}

export interface Report {
  id: string;
  author: string;
  createdAt: string;
  markedForDeletion: boolean;
  amount: number;
}

/** The alert's reports, derived from its id so nothing but the count is stored. */
export function reportsOf(alert: Alert, institutions: Institution[]): Report[] {
  const rand = prng(hashString(alert.id));
  return Array.from({ length: alert.reportsCount }, (_, i) => ({
    id: `${alert.id}-R${i + 1}`,
    author: pick(rand, institutions).id,
    createdAt: new Date(alert.createdAt + i * 60_000).toISOString(),
    markedForDeletion: rand() < 0.05,
    amount: Math.round(rand() * 500_000) / 100,
  }));
}
