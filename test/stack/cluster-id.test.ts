import { describe, expect, it } from 'vitest';
import { randomClusterId } from '../../src/stack/services.ts';

describe('randomClusterId', () => {
  it('gives 16 random bytes in base64url, never starting with "-" (read as an option by kafka-storage)', () => {
    // One id in 64 would start with '-' if nothing prevented it: 10,000 draws would all but surely hit one.
    const ids = Array.from({ length: 10_000 }, randomClusterId);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});
