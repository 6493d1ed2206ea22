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
 * Per-tenant sliding windows: at most `rate` export requests accepted in any one second, as "requests
 * per second, beyond which 429" reads. (A token bucket as deep as the rate let up to twice the rate
 * through within one second: a client tuned against that could overrun a stricter upstream.) Answers
 * the whole seconds to wait (at least 1) until the oldest accepted request leaves the window.
 */
export class RateLimiter {
  readonly #rate: number;
  readonly #now: () => number;
  /** Per tenant, when its requests of the last second were accepted, oldest first. */
  readonly #accepted = new Map<string, number[]>();

  constructor(rate: number, now: () => number) {
    this.#rate = rate;
    this.#now = now;
  }

  take(tenant: string): number | undefined {
    if (this.#rate <= 0) return undefined;
    const now = this.#now();
    const accepted = this.#accepted.get(tenant) ?? [];
    this.#accepted.set(tenant, accepted);
    let expired = 0;
    while (expired < accepted.length && (accepted[expired] as number) <= now - 1000) expired++;
    accepted.splice(0, expired);
    if (accepted.length < this.#rate) {
      accepted.push(now);
      return undefined;
    }
    return Math.max(1, Math.ceil(((accepted[0] as number) + 1000 - now) / 1000));
  }
}
