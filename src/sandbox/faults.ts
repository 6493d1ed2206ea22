import { InvalidInputError } from '../errors.ts';
import { prng, type Rand } from './prng.ts';

export interface SandboxFaults {
  /** Added before answering each request. */
  latencyMs: number;
  /** Share (0..1) of requests answered 503 with a JSON error body. */
  errorRate: number;
  /** Share (0..1) of requests whose connection is destroyed after the headers and half the body. */
  resetRate: number;
  /** The next N export requests of every tenant answer 429 with Retry-After. */
  burst429: number;
  /** Share (0..1) of changes that also put a malformed row in the feed. */
  malformedRowRate: number;
}

export const noFaults: Readonly<SandboxFaults> = Object.freeze({
  latencyMs: 0,
  errorRate: 0,
  resetRate: 0,
  burst429: 0,
  malformedRowRate: 0,
});

const limits: Record<keyof SandboxFaults, { max: number; integer: boolean }> = {
  latencyMs: { max: 600_000, integer: false },
  errorRate: { max: 1, integer: false },
  resetRate: { max: 1, integer: false },
  burst429: { max: 1_000_000, integer: true },
  malformedRowRate: { max: 1, integer: false },
};

/** Checks a partial fault set (from code or the admin endpoint); throws naming the bad field. */
export function checkFaults(value: unknown): Partial<SandboxFaults> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInputError('SANDBOX_FAULTS', 'faults must be an object');
  }
  const faults: Partial<SandboxFaults> = {};
  for (const [name, v] of Object.entries(value)) {
    const limit = limits[name as keyof SandboxFaults];
    if (!limit) {
      throw new InvalidInputError(
        'SANDBOX_FAULTS',
        `unknown fault ${name}; known: ${Object.keys(limits).join(', ')}`,
      );
    }
    if (
      typeof v !== 'number' ||
      !Number.isFinite(v) ||
      v < 0 ||
      v > limit.max ||
      (limit.integer && !Number.isInteger(v))
    ) {
      throw new InvalidInputError(
        'SANDBOX_FAULTS',
        `${name} must be ${limit.integer ? 'an integer' : 'a number'} from 0 to ${limit.max}`,
      );
    }
    faults[name as keyof SandboxFaults] = v;
  }
  return faults;
}

/** The faults in force, with seeded dice so a run with the same seed fails the same way. */
export class FaultState {
  #faults: SandboxFaults;
  readonly #rand: Rand;
  /** Forced 429s left per tenant; a tenant not listed still has the full `burst429`. */
  readonly #burstLeft = new Map<string, number>();

  constructor(initial: Partial<SandboxFaults>, seed: number) {
    this.#faults = { ...noFaults, ...checkFaults(initial) };
    this.#rand = prng(seed ^ 0x68e31da4);
  }

  get current(): SandboxFaults {
    return { ...this.#faults };
  }

  set(partial: Partial<SandboxFaults>): void {
    this.#faults = { ...this.#faults, ...checkFaults(partial) };
    // A new burst429 value starts a new burst for every tenant.
    if (partial.burst429 !== undefined) this.#burstLeft.clear();
  }

  /** True with probability `rate`. */
  roll(rate: number): boolean {
    return rate > 0 && this.#rand() < rate;
  }

  /** True when this tenant's request is one of its forced 429s. */
  takeBurst(tenant: string): boolean {
    const left = this.#burstLeft.get(tenant) ?? this.#faults.burst429;
    if (left <= 0) return false;
    this.#burstLeft.set(tenant, left - 1);
    return true;
  }
}

/**
 * Per-tenant token buckets: `rate` export requests per second, bursts up to `rate`. Answers the
 * whole seconds to wait (at least 1) when the tenant's bucket is empty.
 */
export class RateLimiter {
  readonly #rate: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rate: number, now: () => number) {
    this.#rate = rate;
    this.#now = now;
  }

  take(tenant: string): number | undefined {
    if (this.#rate <= 0) return undefined;
    const now = this.#now();
    const bucket = this.#buckets.get(tenant) ?? { tokens: this.#rate, at: now };
    bucket.tokens = Math.min(this.#rate, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * this.#rate);
    bucket.at = now;
    this.#buckets.set(tenant, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.#rate));
  }
}
