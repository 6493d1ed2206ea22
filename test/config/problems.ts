import { expect } from 'vitest';
import { ConfigError } from '../../src/errors.ts';

/** The problems of the ConfigError that `fn` throws; fails the test when it throws none. */
export function problemsOf(fn: () => unknown): { variable: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}
