import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadTableConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/logger.ts';
import { startTableService } from '../../src/table/index.ts';
import { alertFor, alertsTopic, ibans, storeDir, tableEnv, untilReady } from './harness.ts';

const KEY = 'engine-key-0123';

async function service(extra: Record<string, string> = {}) {
  const { topic, publish } = await alertsTopic(2);
  const all = ibans(40, 3);
  await publish(all.map((iban, n) => ({ type: 'upsert', alert: alertFor(iban, n) })));
  await publish([{ type: 'deactivate', iban: all[0] ?? '', n: 99 }]);
  const config = loadTableConfig(tableEnv(topic, join(await storeDir(), 'table.db'), extra));
  const running = await startTableService(config, silentLogger());
  onTestFinished(() => running.stop());
  await untilReady(running.url);
  const call = async (path: string, init: { method?: 'GET' | 'POST'; body?: string; key?: string } = {}) => {
    const response = await request(`${running.url}${path}`, {
      method: init.method ?? 'GET',
      headers: {
        ...(init.body !== undefined && { 'content-type': 'application/json' }),
        ...(init.key !== undefined && { 'x-api-key': init.key }),
      },
      ...(init.body !== undefined && { body: init.body }),
    });
    const text = await response.body.text();
    return {
      status: response.statusCode,
      headers: response.headers,
      body: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : text,
    };
  };
  return { all, call, url: running.url };
}

describe('the alert table HTTP API', () => {
  it('answers one IBAN in any spelling, 404 without an active alert, 400 for a non-IBAN, with freshness headers', async () => {
    const { all, call } = await service();
    const iban = all[5] ?? '';
    const spaced = encodeURIComponent(iban.toLowerCase().replace(/(.{4})/g, '$1 '));
    const hit = await call(`/v1/alerts/${spaced}`);
    expect(hit.status).toBe(200);
    expect(hit.body).toEqual({
      iban,
      alertId: `a-${iban}`,
      bic: null,
      qualification: 'CONFIRMED',
      qualificationRaw: null,
      reportsCount: 5,
      updatedAt: new Date(1_750_000_000_005).toISOString(),
      eventId: `e-${iban}-5`,
    });
    expect(hit.headers['x-table-offset-lag']).toMatch(/^\d+$/);
    expect(Date.parse(String(hit.headers['x-table-updated-at']))).toBeGreaterThan(Date.now() - 120_000);
    expect((await call(`/v1/alerts/${all[0]}`)).body).toMatchObject({ code: 'NO_ACTIVE_ALERT' });
    expect((await call(`/v1/alerts/${all[0]}`)).status).toBe(404);
    const bad = await call('/v1/alerts/DE00%20NOT%20AN%20IBAN');
    expect(bad).toMatchObject({ status: 400, body: { code: 'INVALID_IBAN' } });
    expect((await call('/v1/alerts/%E0%A4%A')).status).toBe(400);
    const metrics = await call('/metrics');
    expect(metrics.headers['x-table-offset-lag']).toBeDefined();
    expect(metrics.body).toMatch(/fraudlink_table_lookups_total\{result="hit"\} 1/);
    expect(metrics.body).toMatch(/fraudlink_table_lookups_total\{result="invalid"\} 1/);
    expect(metrics.body).toMatch(/fraudlink_table_lookups_total\{result="miss"\} 2/);
    expect(metrics.body).toMatch(/fraudlink_table_rows 39/);
    expect(metrics.body).toMatch(/fraudlink_table_lookup_seconds_bucket/);
  });

  it('looks up a batch in order, and refuses more than 1,000 IBANs, a body over the limit and bad JSON', async () => {
    const { all, call, url } = await service();
    const asked = [all[3] ?? '', 'garbage', all[0] ?? '', ` ${(all[7] ?? '').toLowerCase()} `];
    const answer = await call('/v1/alerts/lookup', {
      method: 'POST',
      body: JSON.stringify({ ibans: asked }),
    });
    expect(answer.status).toBe(200);
    const results = (answer.body as { results: { iban: string; alert: { alertId: string } | null }[] })
      .results;
    expect(results.map((r) => r.iban)).toEqual(asked);
    expect(results.map((r) => r.alert?.alertId ?? null)).toEqual([`a-${all[3]}`, null, null, `a-${all[7]}`]);
    expect(results[1]).toMatchObject({ error: 'INVALID_IBAN' });

    const tooMany = JSON.stringify({ ibans: Array.from({ length: 1001 }, () => all[1]) });
    expect((await call('/v1/alerts/lookup', { method: 'POST', body: tooMany })).body).toMatchObject({
      code: 'TOO_MANY_IBANS',
    });
    const huge = JSON.stringify({ ibans: ['x'.repeat(200_000)] });
    expect(await call('/v1/alerts/lookup', { method: 'POST', body: huge })).toMatchObject({
      status: 413,
      body: { code: 'BODY_TOO_LARGE' },
    });
    // Sent chunked, with no length declared: refused once past the limit, the rest left unread.
    const chunked = await request(`${url}/v1/alerts/lookup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Readable.from(
        (function* () {
          yield '{"ibans": [';
          for (let i = 0; i < 100; i++) yield `"${'y'.repeat(4096)}",`;
          yield '""]}';
        })(),
      ),
    });
    expect(chunked.statusCode).toBe(413);
    expect(await chunked.body.json()).toMatchObject({ code: 'BODY_TOO_LARGE' });
    expect(await call('/v1/alerts/lookup', { method: 'POST', body: '{"ibans": [' })).toMatchObject({
      status: 400,
      body: { code: 'INVALID_JSON' },
    });
    expect(await call('/v1/alerts/lookup', { method: 'POST', body: '{"ibans": [1, 2]}' })).toMatchObject({
      status: 400,
      body: { code: 'INVALID_BODY' },
    });
    expect((await call('/v1/alerts/lookup')).status).toBe(405);
    // Still serving after all of it.
    expect((await call(`/v1/alerts/${all[3]}`)).status).toBe(200);
  });

  it('pages with an opaque cursor and filters, and refuses bad queries', async () => {
    const { all, call } = await service();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await call(`/v1/alerts?limit=6${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      const body = page.body as { alerts: { iban: string }[]; nextCursor: string | null };
      seen.push(...body.alerts.map((a) => a.iban));
      cursor = body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.slice(1).sort());
    const after = await call(`/v1/alerts?updatedAfter=${new Date(1_750_000_000_030).toISOString()}`);
    expect((after.body as { alerts: unknown[] }).alerts).toHaveLength(9);
    for (const query of [
      'limit=0',
      'limit=1001',
      'qualification=NOPE',
      'updatedAfter=yesterday',
      'cursor=abc',
    ]) {
      expect((await call(`/v1/alerts?${query}`)).status, query).toBe(400);
    }
  });

  it('asks every /v1 call for one of TABLE_API_KEYS, and leaves the page and probes open', async () => {
    const { all, call } = await service({ TABLE_API_KEYS: `other-key,${KEY}` });
    const path = `/v1/alerts/${all[2]}`;
    expect(await call(path)).toMatchObject({ status: 401, body: { code: 'UNAUTHORIZED' } });
    expect((await call(path, { key: 'wrong' })).status).toBe(401);
    expect((await call(path, { key: `${KEY}x` })).status).toBe(401);
    expect((await call(path, { key: KEY })).status).toBe(200);
    expect((await call(path, { key: 'other-key' })).status).toBe(200);
    const lookup = { method: 'POST' as const, body: JSON.stringify({ ibans: [all[2]] }) };
    expect((await call('/v1/alerts/lookup', lookup)).status).toBe(401);
    expect((await call('/v1/alerts?limit=1')).status).toBe(401);
    expect((await call('/healthz')).status).toBe(200);
    const page = await call('/');
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="api-key"');
  });

  it('answers from its store, not ready, while Kafka cannot be reached, and stops at once', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const config = loadTableConfig(
      tableEnv('table.unreachable', join(await storeDir(), 'table.db'), {
        KAFKA_BROKERS: `127.0.0.1:${port}`,
      }),
    );
    const running = await startTableService(config, silentLogger());
    onTestFinished(() => running.stop());
    const ready = await request(`${running.url}/readyz`);
    expect(ready.statusCode).toBe(503);
    expect(await ready.body.json()).toEqual({ ready: false, reason: 'connecting to Kafka' });
    const lookup = await request(`${running.url}/v1/alerts/${ibans(1, 9)[0]}`);
    expect(lookup.statusCode).toBe(404);
    expect(lookup.headers['x-table-updated-at']).toBe('never');
    await lookup.body.dump();
    const started = performance.now();
    await running.stop();
    await running.done;
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
