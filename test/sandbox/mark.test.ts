import { describe, expect, it } from 'vitest';
import { createSandbox } from '../../src/sandbox/index.ts';
import { call, startSandbox } from './helpers.ts';

const MARK = 'x-fraudlink-sandbox';

describe('the sandbox mark', () => {
  it('is on every answer: data, errors of every kind, injected faults and admin routes', async () => {
    const sandbox = await startSandbox({ alerts: 5, basePath: '/api' });
    const base = sandbox.url;
    const origin = new URL(base).origin;
    const answers = [
      await call(base, '/sharing/v1/alerts/export', { key: 'sandbox-key' }),
      await call(base, '/sharing/v1/alerts/export', { key: 'sandbox-key', method: 'HEAD' }),
      await call(base, '/vop/v1/verify', {
        key: 'sandbox-key',
        body: { iban: 'DE89370400440532013000', party: { name: 'A' } },
      }),
      await call(base, '/sharing/v1/alerts/export'),
      await call(base, '/sharing/v1/alerts/export', { key: 'sandbox-key', method: 'POST', body: {} }),
      await call(base, '/no/such/route', { key: 'sandbox-key' }),
      await call(origin, '/outside'),
      await call(base, '/vop/v1/verify', { key: 'sandbox-key', raw: '{', contentType: 'application/json' }),
      await call(base, '/__admin/faults'),
    ];
    sandbox.setFaults({ errorRate: 1 });
    answers.push(await call(base, '/sharing/v1/alerts/export', { key: 'sandbox-key' }));
    sandbox.setFaults({ errorRate: 0 });
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 401, 405, 404, 404, 400, 200, 503]);
    for (const answer of answers) expect(answer.headers[MARK]).toBe('1');
  });
});

describe('the admin token', () => {
  it('is required to listen beyond loopback', () => {
    for (const host of ['0.0.0.0', '::', '192.0.2.1', 'sandbox.example'])
      expect(() => createSandbox({ host })).toThrow(/adminToken is required when host is not loopback/);
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost'])
      expect(() => createSandbox({ host })).not.toThrow();
  });

  it('guards every admin route once set, and leaves the API to its keys', async () => {
    const sandbox = await startSandbox({ alerts: 5, adminToken: 'admin-t0ken' });
    const admin = (authorization?: string) =>
      fetch(
        `${sandbox.url}/__admin/faults`,
        authorization === undefined ? {} : { headers: { authorization } },
      );
    const refused = [
      await admin(),
      await admin('Bearer wrong'),
      await admin('admin-t0ken'),
      await admin('Bearer admin-t0ke'),
    ];
    expect(refused.map((r) => r.status)).toEqual([401, 401, 401, 401]);
    expect(refused[0]?.headers.get(MARK)).toBe('1');
    expect((await admin('Bearer admin-t0ken')).status).toBe(200);
    expect((await call(sandbox.url, '/sharing/v1/alerts/export', { key: 'sandbox-key' })).status).toBe(200);
  });
});
