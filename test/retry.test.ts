import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AbortedError,
  UpstreamRateLimitedError,
  UpstreamUnavailableError,
  UsageError,
} from '../src/errors.ts';
import {
  backoffDelay,
  defaultRetryPolicy,
  MAX_RETRY_AFTER_MS,
  MAX_TIMER_MS,
  parseRetryAfter,
  retry,
  settledWithin,
  sleep,
} from '../src/retry.ts';

const fast = { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 };

/** A task that throws `errorOf(n)` at its n-th call, and its calls counted so far. */
function throwing(errorOf: (call: number) => Error) {
  const counted = { calls: 0 };
  const task = async (): Promise<never> => {
    counted.calls++;
    throw errorOf(counted.calls);
  };
  return { task, counted };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('retry', () => {
  it('retries a retriable error and returns the first success', async () => {
    let calls = 0;
    const result = await retry(
      async () => {
        calls++;
        if (calls < 3) throw new UpstreamUnavailableError('503');
        return 'ok';
      },
      { ...fast, retries: 5 },
    );
    expect(result).toBe('ok');
    expect(calls).toBe(3);
  });

  it('never retries a TypeError, even when asked to retry everything', async () => {
    const { task, counted } = throwing(() => new TypeError('undefined is not a function'));
    await expect(retry(task, { ...fast, shouldRetry: () => true })).rejects.toBeInstanceOf(TypeError);
    expect(counted.calls).toBe(1);
  });

  it('does not retry a non-retriable error', async () => {
    const { task, counted } = throwing(() => new UsageError('bad'));
    await expect(retry(task, fast)).rejects.toBeInstanceOf(UsageError);
    expect(counted.calls).toBe(1);
  });

  it('stops after the configured number of retries with the last error', async () => {
    const { task, counted } = throwing((call) => new UpstreamUnavailableError(`503 #${call}`));
    await expect(retry(task, { ...fast, retries: 2 })).rejects.toThrow('503 #3');
    expect(counted.calls).toBe(3);
  });

  it('waits at least the Retry-After the server asked for', async () => {
    const delays: number[] = [];
    let calls = 0;
    await retry(
      async () => {
        calls++;
        if (calls === 1) throw new UpstreamRateLimitedError('429', { retryAfterMs: 40 });
        return 'ok';
      },
      { ...fast, onRetry: ({ delayMs }) => delays.push(delayMs) },
    );
    expect(delays).toEqual([40]);
  });

  it('cancels a pending backoff as soon as the signal aborts', async () => {
    const controller = new AbortController();
    const pending = retry(
      async () => {
        throw new UpstreamRateLimitedError('429', { retryAfterMs: 60_000 });
      },
      { ...fast, signal: controller.signal, onRetry: () => queueMicrotask(() => controller.abort()) },
    );
    await expect(pending).rejects.toBeInstanceOf(AbortedError);
  });

  it('gives up instead of starting a wait that would end past the deadline', async () => {
    const { task, counted } = throwing(() => new UpstreamRateLimitedError('429', { retryAfterMs: 500 }));
    const now = 1_000;
    await expect(retry(task, { ...fast, deadline: now + 100, now: () => now })).rejects.toBeInstanceOf(
      UpstreamRateLimitedError,
    );
    expect(counted.calls).toBe(1);
  });
});

describe('backoffDelay', () => {
  it('grows exponentially up to the cap', () => {
    const policy = { ...defaultRetryPolicy, initialDelayMs: 100, maxDelayMs: 1000, jitter: 0 };
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, policy))).toEqual([100, 200, 400, 800, 1000]);
  });

  it("waits out a Retry-After beyond a timer's range (30 days) for an hour, not for 1 ms", async () => {
    const policy = { ...defaultRetryPolicy, jitter: 0 };
    expect(backoffDelay(1, policy, 2_600_000_000)).toBe(3_600_000);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], fakeNodeBuiltins: true });
    const controller = new AbortController();
    const { task, counted } = throwing(
      () => new UpstreamRateLimitedError('429', { retryAfterMs: 2_600_000_000 }),
    );
    const waiting = Promise.withResolvers<number>();
    const pending = retry(task, {
      retries: Infinity,
      signal: controller.signal,
      onRetry: ({ delayMs }) => waiting.resolve(delayMs),
    });
    pending.catch(() => {});
    expect(await waiting.promise).toBe(MAX_RETRY_AFTER_MS);
    await vi.advanceTimersByTimeAsync(MAX_RETRY_AFTER_MS - 1);
    expect(counted.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(counted.calls).toBe(2);
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(AbortedError);
  });

  it('spreads delays with jitter within the jittered fraction', () => {
    const policy = { ...defaultRetryPolicy, initialDelayMs: 1000, jitter: 0.5 };
    expect(backoffDelay(1, policy, undefined, () => 0)).toBe(500);
    expect(backoffDelay(1, policy, undefined, () => 0.99)).toBe(995);
  });
});

describe('sleep', () => {
  it('does not wake after 1 ms when asked to sleep longer than a timer can hold, but after the longest one can', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], fakeNodeBuiltins: true });
    let woke = false;
    const pending = sleep(2 ** 32).then(() => {
      woke = true;
    });
    await vi.advanceTimersByTimeAsync(1);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS - 2);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await pending;
    expect(woke).toBe(true);
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(' 0 ')).toBe(0);
  });

  it('reads an HTTP-date relative to now', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:59:00 GMT', now)).toBe(0);
  });

  it('reads all three HTTP-date forms as GMT, the asctime one too, whatever the local time zone', () => {
    const tz = process.env.TZ;
    process.env.TZ = 'America/New_York'; // Node applies a TZ set at run time to the dates made after
    try {
      const now = Date.UTC(2026, 10, 23, 12, 0, 0);
      expect(parseRetryAfter('Mon, 23 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
      expect(parseRetryAfter('Monday, 23-Nov-26 12:00:30 GMT', now)).toBe(30_000);
      expect(parseRetryAfter('Mon Nov 23 12:00:30 2026', now)).toBe(30_000);
      expect(parseRetryAfter('Fri Nov  6 08:49:37 2026', Date.UTC(2026, 10, 6, 8, 49, 0))).toBe(37_000);
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });

  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    // Date.parse makes dates of these, all in the past: a wait of 0 instead of the backoff's.
    for (const value of ['-1', '+5', '5, 5', 'in 5', 'Nov 23'])
      expect(parseRetryAfter(value), value).toBeUndefined();
  });
});

describe('settledWithin', () => {
  it('gives the value of a promise that settles in time, undefined for one that does not, and throws its rejection', async () => {
    expect(await settledWithin(Promise.resolve(7), 1000)).toBe(7);
    expect(await settledWithin(new Promise(() => {}), 5)).toBeUndefined();
    expect(await settledWithin(Promise.resolve(7), 0)).toBeUndefined();
    await expect(settledWithin(Promise.reject(new Error('no')), 1000)).rejects.toThrow('no');
  });
});
