import { setTimeout as delay } from 'node:timers/promises';
import { AbortedError, isProgrammerError, isRetriable } from './errors.ts';

export interface RetryPolicy {
  /** Attempts after the first one; Infinity retries until the signal aborts or the deadline passes. */
  retries: number;
  initialDelayMs: number;
  maxDelayMs: number;
  factor: number;
  /** Fraction of each delay that is randomised (0 = none, 1 = "full jitter"). */
  jitter: number;
}

export const defaultRetryPolicy: RetryPolicy = Object.freeze({
  retries: 5,
  initialDelayMs: 200,
  maxDelayMs: 30_000,
  factor: 2,
  jitter: 0.5,
});

/**
 * The backoff that waits out an outage of the broker or the registry, however long it lasts: 1 s,
 * doubling up to 30 s, each wait randomised by half so that the instances of a fleet do not all
 * come back at once.
 */
export const OUTAGE_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  retries: Number.POSITIVE_INFINITY,
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  factor: 2,
  jitter: 0.5,
});

/** The longest delay a Node timer takes; a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The longest a server's `Retry-After` is waited out before trying again: one of 30 days (or an
 * HTTP-date as far) would otherwise stop a connector for a month, or as a timer fire after 1 ms.
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

export interface RetryOptions extends Partial<RetryPolicy> {
  signal?: AbortSignal;
  /** Epoch ms after which no new attempt starts; a wait that would end later is not begun. */
  deadline?: number;
  /** Decides whether an error is worth another attempt; programmer errors never are. */
  shouldRetry?: (err: unknown) => boolean;
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  /** For tests: the source of randomness and of time. */
  random?: () => number;
  now?: () => number;
}

/**
 * Delay before retry number `attempt` (1-based): exponential, capped, with jitter; a server's
 * `Retry-After` is a floor, never shortened by jitter, up to `MAX_RETRY_AFTER_MS`.
 */
export function backoffDelay(
  attempt: number,
  policy: RetryPolicy,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** (attempt - 1));
  const jittered = exp * (1 - policy.jitter) + exp * policy.jitter * random();
  const base = Math.round(jittered);
  if (retryAfterMs === undefined) return base;
  return Math.max(Math.min(retryAfterMs, MAX_RETRY_AFTER_MS), Math.min(base, policy.maxDelayMs));
}

/**
 * The asctime form of an HTTP-date (`Sun Nov  6 08:49:37 1994`), which names no zone: HTTP-dates
 * are all GMT (RFC 9110 §5.6.7), whereas Date.parse reads a date without a zone as local time.
 */
const ASCTIME_DATE = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;
/** IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`). */
const GMT_DATE = /^[A-Za-z]{3,9}, \d{1,2}[ -][A-Za-z]{3}[ -]\d{2}(\d{2})? \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Parses an HTTP `Retry-After` value (delta-seconds or HTTP-date: IMF-fixdate, RFC 850 or asctime,
 * all GMT) into milliseconds from `now`.
 */
export function parseRetryAfter(
  value: string | undefined | null,
  now: number = Date.now(),
): number | undefined {
  if (value === undefined || value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  // Only the HTTP-date forms: Date.parse makes a date of almost anything ('-1', 'in 5').
  const at = ASCTIME_DATE.test(trimmed)
    ? Date.parse(`${trimmed} GMT`)
    : GMT_DATE.test(trimmed)
      ? Date.parse(trimmed)
      : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

function retryAfterOf(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && 'retryAfterMs' in err) {
    const value = (err as { retryAfterMs: unknown }).retryAfterMs;
    if (typeof value === 'number' && Number.isFinite(value)) return value;
  }
  return undefined;
}

/** The promise's value if it settles within `ms`, else undefined (the promise runs on); its rejection is thrown. */
export async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  if (ms <= 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `promise`'s value, or AbortedError (`what` aborted) as soon as `signal` aborts. The promise itself
 * runs on, unobserved: a lookup shared with others, or a client's own retries that cannot be cut.
 */
export async function unlessAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
): Promise<T> {
  if (!signal) return promise;
  promise.catch(() => {});
  let onAbort = () => {};
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(new AbortedError(`${what} aborted`, { cause: signal.reason }));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Sleeps `ms` (at most `MAX_TIMER_MS`), rejecting with AbortedError as soon as `signal` aborts. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(Math.min(ms, MAX_TIMER_MS), undefined, signal ? { signal } : undefined);
  } catch (err) {
    if (signal?.aborted) throw new AbortedError('wait aborted', { cause: signal.reason });
    throw err;
  }
}

/**
 * Runs `fn` until it succeeds, the error is not retriable, the retries are spent, the deadline would
 * be passed, or `signal` aborts (which cancels a pending backoff at once).
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const policy: RetryPolicy = {
    retries: options.retries ?? defaultRetryPolicy.retries,
    initialDelayMs: options.initialDelayMs ?? defaultRetryPolicy.initialDelayMs,
    maxDelayMs: options.maxDelayMs ?? defaultRetryPolicy.maxDelayMs,
    factor: options.factor ?? defaultRetryPolicy.factor,
    jitter: options.jitter ?? defaultRetryPolicy.jitter,
  };
  const shouldRetry = options.shouldRetry ?? isRetriable;
  const now = options.now ?? Date.now;
  for (let attempt = 0; ; attempt++) {
    if (options.signal?.aborted) throw new AbortedError('retry aborted', { cause: options.signal.reason });
    try {
      return await fn(attempt);
    } catch (err) {
      if (isProgrammerError(err) || !shouldRetry(err) || attempt >= policy.retries) throw err;
      if (options.signal?.aborted) throw err;
      const delayMs = backoffDelay(attempt + 1, policy, retryAfterOf(err), options.random);
      if (options.deadline !== undefined && now() + delayMs >= options.deadline) throw err;
      options.onRetry?.({ attempt: attempt + 1, delayMs, error: err });
      await sleep(delayMs, options.signal);
    }
  }
}
