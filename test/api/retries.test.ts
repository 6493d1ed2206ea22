import { getEventListeners } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, createApiClient, type RetryInfo } from '../../src/api/index.ts';
import {
  AbortedError,
  ErrorCodes,
  UpstreamRateLimitedError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from '../../src/errors.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.ts';

// Retries against the sandbox's injected faults; attempts are counted in its request log.
let sandbox: Sandbox;
let client: ApiClient;
const fast = { initialDelayMs: 5, maxDelayMs: 20 };

beforeAll(async () => {
  sandbox = createSandbox({ port: 0, alerts: 40, seed: 3, changesPerSec: 0, pageSize: 40, rateLimit: 0 });
  const { url, apiKeys } = await sandbox.start();
  client = createApiClient({ baseUrl: url, apiKey: apiKeys[0]!, timeoutMs: 5000 });
});

afterEach(() => {
  sandbox.setFaults({ latencyMs: 0, errorRate: 0, resetRate: 0, burst429: 0 });
  sandbox.clearRequestLog();
});

afterAll(async () => {
  await client?.close();
  await sandbox?.stop();
});

const statuses = () => sandbox.requestLog().map((r) => r.status);

describe('retries', () => {
  it('waits out the Retry-After of a 429 and then gets the page', async () => {
    sandbox.setFaults({ burst429: 1 });
    const retries: RetryInfo[] = [];
    const page = await client.exportPage({}, { onRetry: (info) => retries.push(info) });
    expect(page.rows).toHaveLength(40);
    expect(statuses()).toEqual([429, 200]);
    expect(retries).toHaveLength(1);
    expect(retries[0]?.error).toBeInstanceOf(UpstreamRateLimitedError);
    expect((retries[0]!.error as UpstreamRateLimitedError).retryAfterMs).toBe(1000);
    // The hint is a floor that jitter never shortens.
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(1000);
  });

  it('retries a 503 and returns the answer of the next attempt', async () => {
    sandbox.setFaults({ errorRate: 1 });
    const page = await client.searchReceived(
      { pageSize: 3 },
      { retry: fast, onRetry: () => sandbox.setFaults({ errorRate: 0 }) },
    );
    expect(page.alerts.length).toBeGreaterThan(0);
    expect(statuses()).toEqual([503, 200]);
  });

  it('retries a connection reset in the middle of a page and never returns the half page', async () => {
    sandbox.setFaults({ resetRate: 1 });
    const codes: string[] = [];
    const page = await client.exportPage(
      {},
      {
        retry: fast,
        onRetry: ({ error }) => {
          codes.push((error as { code: string }).code);
          sandbox.setFaults({ resetRate: 0 });
        },
      },
    );
    expect(codes).toEqual([ErrorCodes.UPSTREAM_CONNECTION]);
    expect(statuses()).toEqual([-1, 200]);
    expect(page).toEqual(await client.exportPage({}));
  });

  it('gives up with the last typed error once the retries are spent', async () => {
    sandbox.setFaults({ errorRate: 1 });
    const error = await client.getAlert('1', { retry: { ...fast, retries: 2 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamUnavailableError);
    expect(error).toMatchObject({ status: 503, method: 'GET', path: '/sharing/v1/alerts/1' });
    expect(statuses()).toEqual([503, 503, 503]);
  });

  it('makes exactly one attempt when retries are disabled', async () => {
    sandbox.setFaults({ burst429: 5 });
    const error = await client.exportPage({}, { retry: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamRateLimitedError);
    expect(statuses()).toEqual([429]);
  });

  it('stops retrying when the next wait would pass the deadline', async () => {
    sandbox.setFaults({ errorRate: 1 });
    const retries: RetryInfo[] = [];
    const deadline = Date.now() + 300;
    const error = await client
      .verify(
        { iban: 'DE89370400440532013000', party: { name: 'A' } },
        { deadline, onRetry: (info) => retries.push(info) },
      )
      .catch((e: unknown) => e);
    // Usually the last 503 is returned because the next wait would pass the deadline; on a loaded
    // machine the last attempt may instead still be in flight at the deadline and be cut off.
    if (!(error instanceof UpstreamUnavailableError)) {
      expect(error).toBeInstanceOf(UpstreamTimeoutError);
      expect((error as Error).message).toContain('deadline');
    }
    expect(statuses().length).toBe(retries.length + 1);
  });

  it('cuts off a request still in flight at the deadline with a timeout error', async () => {
    sandbox.setFaults({ latencyMs: 3000 });
    const error = await client
      .verify({ iban: 'DE89370400440532013000', party: { name: 'A' } }, { deadline: Date.now() + 150 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as Error).message).toContain('deadline');
  });

  it('serves a call whose deadline is too far away for a timer (Long.MAX_VALUE, 30 days)', async () => {
    sandbox.setFaults({ latencyMs: 20 });
    for (const deadline of [Number(2n ** 63n - 1n), Date.now() + 30 * 24 * 3600 * 1000]) {
      const answer = await client.verify(
        { iban: 'DE89370400440532013000', party: { name: 'A' } },
        { deadline, retry: { retries: 3, ...fast } },
      );
      expect(answer.partyNameMatch).toBeDefined();
    }
    expect(statuses()).toEqual([200, 200]);
  });

  it('follows a long-lived caller signal during a call with a deadline, and leaves nothing on it after', async () => {
    const stopping = new AbortController();
    const iban = 'DE89370400440532013000';
    for (let i = 0; i < 3; i++)
      await client.verify(
        { iban, party: { name: 'A' } },
        { signal: stopping.signal, deadline: Date.now() + 10_000 },
      );
    expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
    sandbox.setFaults({ latencyMs: 3000 });
    const cut = client.verify(
      { iban, party: { name: 'A' } },
      { signal: stopping.signal, deadline: Date.now() + 10_000 },
    );
    stopping.abort(new Error('stopping'));
    await expect(cut).rejects.toBeInstanceOf(AbortedError);
  });

  it('does not send a request whose deadline has already passed', async () => {
    const error = await client
      .verify({ iban: 'DE89370400440532013000', party: { name: 'A' } }, { deadline: Date.now() - 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect(statuses()).toEqual([]);
  });

  it('times out when no response headers arrive within timeoutMs', async () => {
    const impatient = createApiClient({ baseUrl: sandbox.url, apiKey: 'sandbox-key', timeoutMs: 150 });
    sandbox.setFaults({ latencyMs: 3000 });
    try {
      const error = await impatient.exportPage({}, { retry: false }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamTimeoutError);
      expect((error as Error).message).toContain('within 150 ms');
      expect((error as UpstreamTimeoutError).retriable).toBe(true);
    } finally {
      await impatient.close();
    }
  });

  it('abandons a pending backoff as soon as the signal aborts', async () => {
    sandbox.setFaults({ errorRate: 1 });
    const controller = new AbortController();
    const error = await client
      .exportPage(
        {},
        {
          signal: controller.signal,
          // A wait far longer than the test timeout: only the abort can end it.
          retry: { initialDelayMs: 600_000, maxDelayMs: 600_000, jitter: 0 },
          onRetry: () => setImmediate(() => controller.abort(new Error('shutting down'))),
        },
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect(statuses()).toEqual([503]);
  });

  it('rejects at once, without a request, when the signal has already aborted', async () => {
    const error = await client.exportPage({}, { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect(statuses()).toEqual([]);
  });
});
