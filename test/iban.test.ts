import { describe, expect, it } from 'vitest';
import {
  cachedIbanVerdicts,
  IBAN_VERDICT_CACHE_MAX,
  isValidNormalizedIban,
  MAX_IBAN_LENGTH,
} from '../src/iban.ts';

describe('isValidNormalizedIban', () => {
  it('checks shape and mod-97', () => {
    expect(isValidNormalizedIban('DE89370400440532013000')).toBe(true);
    expect(isValidNormalizedIban('DE88370400440532013000')).toBe(false);
  });

  it('refuses a string longer than any IBAN without caching it', () => {
    const before = cachedIbanVerdicts();
    expect(isValidNormalizedIban(`DE${'1'.repeat(MAX_IBAN_LENGTH)}`)).toBe(false);
    expect(isValidNormalizedIban('D'.repeat(1_000_000))).toBe(false);
    expect(cachedIbanVerdicts()).toBe(before);
  });

  it('keeps at most IBAN_VERDICT_CACHE_MAX verdicts, however many distinct strings it is asked', () => {
    for (let i = 0; i < IBAN_VERDICT_CACHE_MAX + 500; i++) {
      isValidNormalizedIban(`DE00${String(i).padStart(18, '0')}`);
    }
    expect(cachedIbanVerdicts()).toBe(IBAN_VERDICT_CACHE_MAX);
    // Still right for an IBAN asked again after the cache turned over.
    expect(isValidNormalizedIban('DE89370400440532013000')).toBe(true);
  });
});
