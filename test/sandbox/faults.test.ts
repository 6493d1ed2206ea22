import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { call, exportPath, startSandbox } from './helpers.ts';

const EXPORT = exportPath({});

describe('credentials', () => {
  it('answers 401 with a JSON error for a missing or unknown key, on every endpoint, and logs it', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const paths: [string, unknown][] = [
      [EXPORT, undefined],
      ['/sharing/v1/alerts/ALR-00000001', undefined],
      ['/sharing/v1/alerts/sent/search', {}],
      ['/sharing/v1/alerts/received/search', {}],
      ['/vop/v1/verify', { iban: 'DE89370400440532013000', party: { name: 'x' } }],
    ];
    for (const [path, body] of paths) {
      for (const key of [undefined, 'stolen-key']) {
        const answer = await call(sandbox.url, path, { ...(key !== undefined && { key }), body });
        expect(answer).toMatchObject({
          status: 401,
          body: { code: 'UNAUTHORIZED', message: expect.any(String) },
        });
        expect(JSON.stringify(answer.body)).not.toContain('stolen-key');
      }
    }
    expect(sandbox.requestLog().map((r) => r.status)).toEqual(Array(10).fill(401));
    expect(sandbox.requestLog().every((r) => r.tenant === undefined)).toBe(true);
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After in whole seconds once a tenant exceeds its rate, without touching another tenant', async () => {
    const frozen = Date.parse('2026-11-22T09:30:00.000Z');
    const sandbox = await startSandbox({ apiKeys: ['a', 'b'], alerts: 5, rateLimit: 2, now: () => frozen });
    const statuses = [];
    for (let k = 0; k < 3; k++) statuses.push((await call(sandbox.url, EXPORT, { key: 'a' })).status);
    expect(statuses).toEqual([200, 200, 429]);
    const limited = await call(sandbox.url, EXPORT, { key: 'a' });
    expect(limited).toMatchObject({
      status: 429,
      body: { code: 'RATE_LIMITED', message: expect.any(String) },
    });
    expect(limited.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect((await call(sandbox.url, EXPORT, { key: 'b' })).status).toBe(200);
    // Searches are not limited.
    expect(
      (await call(sandbox.url, '/sharing/v1/alerts/received/search', { key: 'a', body: {} })).status,
    ).toBe(200);
  });

  it('refills each tenant at the configured rate', async () => {
    let now = Date.parse('2026-11-22T09:30:00.000Z');
    const sandbox = await startSandbox({ alerts: 5, rateLimit: 1, now: () => now });
    expect((await call(sandbox.url, EXPORT, { key: 'sandbox-key' })).status).toBe(200);
    expect((await call(sandbox.url, EXPORT, { key: 'sandbox-key' })).status).toBe(429);
    now += 1000;
    expect((await call(sandbox.url, EXPORT, { key: 'sandbox-key' })).status).toBe(200);
  });

  it('accepts at most the rate in any one second, also across a second boundary after an idle spell', async () => {
    let now = Date.parse('2026-11-22T09:30:00.000Z');
    const sandbox = await startSandbox({ alerts: 5, rateLimit: 10, now: () => now });
    const accepted = async (n: number) => {
      let ok = 0;
      for (let k = 0; k < n; k++)
        if ((await call(sandbox.url, EXPORT, { key: 'sandbox-key' })).status === 200) ok++;
      return ok;
    };
    // An idle tenant sends 10 at 0.9 s into a second and 10 more at 1.1 s: 20 within 200 ms.
    now += 900;
    expect(await accepted(10)).toBe(10);
    now += 200;
    expect(await accepted(10)).toBe(0);
    const limited = await call(sandbox.url, EXPORT, { key: 'sandbox-key' });
    expect(limited.headers['retry-after']).toBe('1');
    now += 800; // a full second after the first ten
    expect(await accepted(11)).toBe(10);
  });

  it('forces the next N export requests of every tenant to 429 with the burst429 fault', async () => {
    const sandbox = await startSandbox({ apiKeys: ['a', 'b'], alerts: 5, faults: { burst429: 2 } });
    const a = [];
    for (let k = 0; k < 3; k++) a.push((await call(sandbox.url, EXPORT, { key: 'a' })).status);
    const b = [];
    for (let k = 0; k < 3; k++) b.push((await call(sandbox.url, EXPORT, { key: 'b' })).status);
    expect(a).toEqual([429, 429, 200]);
    expect(b).toEqual([429, 429, 200]);
    sandbox.setFaults({ burst429: 1 });
    expect((await call(sandbox.url, EXPORT, { key: 'a' })).headers['retry-after']).toBe('1');
    expect((await call(sandbox.url, EXPORT, { key: 'a' })).status).toBe(200);
  });
});

describe('faults toggled at run time', () => {
  it('answers 503 with a JSON error on every endpoint while errorRate is 1, and recovers when it is 0', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    sandbox.setFaults({ errorRate: 1 });
    const failed = await call(sandbox.url, EXPORT, { key: 'sandbox-key' });
    expect(failed).toMatchObject({
      status: 503,
      body: { code: 'SERVICE_UNAVAILABLE', message: expect.any(String) },
    });
    const verify = await call(sandbox.url, '/vop/v1/verify', { key: 'sandbox-key', body: {} });
    expect(verify.status).toBe(503);
    sandbox.setFaults({ errorRate: 0 });
    expect((await call(sandbox.url, EXPORT, { key: 'sandbox-key' })).status).toBe(200);
  });

  it('cuts the connection after the headers and part of the body while resetRate is 1, logging status -1', async () => {
    const sandbox = await startSandbox({ alerts: 50 });
    sandbox.setFaults({ resetRate: 1 });
    const res = await request(`${sandbox.url}${EXPORT}`, { headers: { 'x-api-key': 'sandbox-key' } });
    expect(res.statusCode).toBe(200);
    await expect(res.body.text()).rejects.toThrow();
    expect(sandbox.requestLog().at(-1)?.status).toBe(-1);
    sandbox.setFaults({ resetRate: 0 });
    expect((await call(sandbox.url, EXPORT, { key: 'sandbox-key' })).status).toBe(200);
  });

  it('delays answers by latencyMs, set through the admin endpoint', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const put = await call(sandbox.url, '/__admin/faults', { method: 'PUT', body: { latencyMs: 150 } });
    expect(put).toMatchObject({ status: 200, body: { latencyMs: 150, errorRate: 0 } });
    const started = performance.now();
    expect((await call(sandbox.url, EXPORT, { key: 'sandbox-key' })).status).toBe(200);
    // A lower bound only: a loaded machine can only make it slower.
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(sandbox.faults().latencyMs).toBe(150);
  });

  it('rejects unknown or out-of-range faults with 400 from the admin endpoint and a throw from setFaults', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    for (const body of [{ errorRate: 2 }, { nope: 1 }, { burst429: 1.5 }, 'x']) {
      const answer = await call(sandbox.url, '/__admin/faults', { method: 'PUT', body });
      expect(answer).toMatchObject({
        status: 400,
        body: { code: 'INVALID_INPUT', message: expect.any(String) },
      });
    }
    expect(() => sandbox.setFaults({ resetRate: -1 })).toThrow(/resetRate/);
    expect(sandbox.faults()).toEqual({
      latencyMs: 0,
      errorRate: 0,
      resetRate: 0,
      burst429: 0,
      malformedRowRate: 0,
    });
  });
});

describe('admin endpoints', () => {
  it('apply changes, inject malformed rows, show rows, holders and the request log, and clear the log', async () => {
    const sandbox = await startSandbox({ alerts: 10 });
    await call(sandbox.url, EXPORT, { key: 'sandbox-key' });
    const log = await call(sandbox.url, '/__admin/requests');
    expect(log.body).toEqual([
      expect.objectContaining({
        method: 'GET',
        path: '/sharing/v1/alerts/export',
        tenant: 'PSP001',
        status: 200,
      }),
    ]);
    expect((await call(sandbox.url, '/__admin/changes', { body: { count: 4 } })).body).toEqual({
      applied: 4,
    });
    expect((await call(sandbox.url, '/__admin/changes', { body: { count: 0 } })).status).toBe(400);
    expect((await call(sandbox.url, '/__admin/malformed', { body: { kind: 'missing-iban' } })).body).toEqual({
      kind: 'missing-iban',
    });
    const rows = (await call(sandbox.url, '/__admin/rows')).body as unknown[];
    expect(rows).toEqual(sandbox.currentRows());
    const iban = 'DE89370400440532013000';
    expect((await call(sandbox.url, `/__admin/holder?iban=${iban}`)).body).toEqual({
      iban,
      name: sandbox.holderName(iban),
    });
    expect((await call(sandbox.url, '/__admin/requests', { method: 'DELETE' })).status).toBe(200);
    expect(sandbox.requestLog()).toEqual([]);
  });

  it('answers the last N requests for limit=N, none for limit=0, and 400 for a limit that is not an integer ≥ 0', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    for (let k = 0; k < 4; k++) await call(sandbox.url, `${EXPORT}?n=${k}`, { key: 'sandbox-key' });
    const limited = async (limit: string) =>
      (await call(sandbox.url, `/__admin/requests?limit=${limit}`)).body as { query: { n: string } }[];
    expect((await limited('2')).map((r) => r.query.n)).toEqual(['2', '3']);
    expect(await limited('0')).toEqual([]);
    expect(await limited('9')).toHaveLength(4);
    for (const limit of ['-2', 'abc', '1.5', '', '1e1']) {
      expect(await call(sandbox.url, `/__admin/requests?limit=${limit}`)).toMatchObject({
        status: 400,
        body: { code: 'INVALID_QUERY', message: expect.any(String) },
      });
    }
  });
});
