import { isValidIBAN } from 'ibantools';

/** Removes spaces and upper-cases letters: the form used as Kafka key and in events. */
export function normalizeIban(raw: string): string {
  return raw.replace(/\s+/g, '').toUpperCase();
}

/** ISO 13616 shape for the country plus the mod-97 check, on the normalised form. */
export function isValidNormalizedIban(iban: string): boolean {
  return isValidIBAN(iban);
}
