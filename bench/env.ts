// Settings from the environment, shared by the benchmarks and the bare-client scripts (which must not
// load src/kafka, so this file imports nothing).

/** A variable the parent benchmark must set. */
export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

/**
 * A positive whole number from the environment, or `fallback` when unset (required when there is no
 * fallback); anything else stops the bench.
 */
export function countEnv(name: string, fallback?: number): number {
  const raw = process.env[name];
  if ((raw === undefined || raw === '') && fallback !== undefined) return fallback;
  const n = Number(requiredEnv(name));
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`${name} must be a positive whole number, got "${raw}"`);
  return n;
}
