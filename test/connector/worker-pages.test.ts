import { describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxUpstream } from '../../src/api/types.ts';
import type { PageRetry } from '../../src/connector/pages.ts';
import { eventValue, KIND_REJECTED } from '../../src/connector/prepare.ts';
import { workerPageSource } from '../../src/connector/worker-pages.ts';
import { AbortedError, ConfigError, UpstreamUnauthorizedError } from '../../src/errors.ts';
import { avroTypeOf } from '../../src/kafka/avro-encoder.ts';
import { unframe } from '../../src/kafka/wire-format.ts';
import { silentLogger } from '../../src/logger.ts';
import { createSandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';

const upserted = avroTypeOf(loadSchema(SchemaNames.AlertUpserted));
const deactivated = avroTypeOf(loadSchema(SchemaNames.AlertDeactivated));

/** A real page worker thread against the sandbox (the upstream's local stand-in). */
async function workerAgainstSandbox(
  options: SandboxOptions,
  apiKey = 'sandbox-key',
  sandboxUpstream: SandboxUpstream = 'allow',
) {
  const sandbox = createSandbox({ port: 0, changesPerSec: 0, rateLimit: 0, ...options });
  const { url } = await sandbox.start();
  onTestFinished(() => sandbox.stop());
  const retries: PageRetry[] = [];
  const pages = workerPageSource({
    api: { baseUrl: url, apiKey, timeoutMs: 5_000, cursorParam: 'cursor', sandboxUpstream },
    schemas: {
      AlertUpserted: { schemaId: 7, subject: 's-up' },
      AlertDeactivated: { schemaId: 8, subject: 's-down' },
    },
    logLevel: 'silent',
    readAhead: 2,
    onRetry: (r) => retries.push(r),
    logger: silentLogger(),
  });
  onTestFinished(() => pages.close());
  return { sandbox, pages, retries };
}

describe('workerPageSource', () => {
  it('hands over every row of the feed, page by page, as Avro values that decode to the rows', async () => {
    const { pages } = await workerAgainstSandbox({ alerts: 250, pageSize: 100 });
    const signal = new AbortController().signal;
    const ids: string[] = [];
    let request = {};
    for (;;) {
      const page = await pages.next(request, signal);
      for (let e = 0; e < page.ends.length; e++) {
        const { schemaId, body } = unframe(eventValue(page, e));
        const value = (schemaId === 7 ? upserted : deactivated).fromBuffer(body) as {
          alertId: string;
          iban: string;
        };
        expect(value.alertId).toBe(page.alertIds[e]);
        expect(value.iban).toBe(page.keys[e]);
        ids.push(value.alertId);
      }
      expect([...page.kinds].filter((k) => k === KIND_REJECTED)).toHaveLength(page.rejected.length);
      if (page.nextCursor === null) break;
      request = { cursor: page.nextCursor };
    }
    expect(ids).toHaveLength(250);
    expect(new Set(ids).size).toBe(250);
  });

  it('reports retries across the thread and revives the upstream error class', async () => {
    const { sandbox, pages, retries } = await workerAgainstSandbox({ alerts: 10, pageSize: 100 });
    sandbox.setFaults({ burst429: 2 });
    const page = await pages.next({}, new AbortController().signal);
    expect(page.ends).toHaveLength(10);
    expect(retries.map((r) => r.code)).toEqual(['UPSTREAM_RATE_LIMITED', 'UPSTREAM_RATE_LIMITED']);

    const refused = await workerAgainstSandbox({ alerts: 10 }, 'not-a-key');
    const err = await refused.pages.next({}, new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamUnauthorizedError);
    expect(err).toMatchObject({ status: 401, retriable: false });
  });

  it('refuses the sandbox as the upstream at its first answer, with a ConfigError naming API_BASE_URL, across the thread', async () => {
    const { sandbox, pages } = await workerAgainstSandbox({ alerts: 10 }, 'sandbox-key', 'refuse');
    const err = await pages.next({}, new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      { variable: 'API_BASE_URL', message: expect.stringContaining('answers as the fraudlink sandbox') },
    ]);
    // Not retried: one request, and not one more after it.
    expect(sandbox.requestLog()).toHaveLength(1);
  });

  it('rejects at once when aborted, and close() ends the worker', async () => {
    const { sandbox, pages } = await workerAgainstSandbox({ alerts: 10 });
    sandbox.setFaults({ latencyMs: 60_000 });
    const controller = new AbortController();
    const page = pages.next({}, controller.signal);
    controller.abort(new AbortedError('stopping'));
    await expect(page).rejects.toBeInstanceOf(AbortedError);
    await pages.close();
    await expect(pages.next({}, new AbortController().signal)).rejects.toThrow(/page worker exited/);
  });
});
