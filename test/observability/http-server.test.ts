import { type AddressInfo, createServer } from 'node:net';
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, exitCodeFor } from '../../src/errors.ts';
import { silentLogger } from '../../src/logger.ts';
import { createOpsServer, type OpsServer } from '../../src/observability/http-server.ts';

let server: OpsServer | undefined;
afterEach(async () => {
  await server?.stop();
});

describe('ops server', () => {
  it('serves Prometheus metrics, health and readiness with its reason', async () => {
    const registry = new Registry();
    const counter = new Counter({ name: 'fraudlink_test_total', help: 'test', registers: [registry] });
    counter.inc(3);
    let ready = false;
    server = createOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry,
      healthy: () => true,
      ready: () => (ready ? { ready } : { ready, reason: 'connecting to Kafka' }),
      logger: silentLogger(),
    });
    const { url } = await server.start();
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    expect(await metrics.text()).toContain('fraudlink_test_total 3');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ ready: false, reason: 'connecting to Kafka' });
    ready = true;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    expect((await fetch(`${url}/nope`)).status).toBe(404);
  });
});

describe('ops server listen failures', () => {
  const opsOn = (host: string, port: number) =>
    createOpsServer({
      host,
      port,
      registry: new Registry(),
      healthy: () => true,
      ready: () => ({ ready: true }),
      logger: silentLogger(),
    });

  /** What start() rejects with, as the CLI reports it: code, variable, message and exit code. */
  async function refusal(ops: OpsServer) {
    const err = await ops.start().then(
      () => expect.unreachable('start() listened'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    const { code, problems } = err as ConfigError;
    return { code, problems, exit: exitCodeFor(err) };
  }

  it('names HTTP_PORT, exit 2, when the port is taken (it was an unexpected failure, exit 1)', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = blocker.address() as AddressInfo;
      expect(await refusal(opsOn('127.0.0.1', port))).toEqual({
        code: 'CONFIG_INVALID',
        problems: [{ variable: 'HTTP_PORT', message: `${port} is already in use on 127.0.0.1` }],
        exit: 2,
      });
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it.each([
    ['a name that does not resolve', 'nowhere.invalid', 'nowhere.invalid does not resolve'],
    // TEST-NET-1 (RFC 5737): on no machine's interfaces.
    ['an address of another machine', '192.0.2.1', '192.0.2.1 is not an address of this machine'],
  ])('names HTTP_HOST, exit 2, for %s', async (_what, host, message) => {
    expect(await refusal(opsOn(host, 0))).toEqual({
      code: 'CONFIG_INVALID',
      problems: [{ variable: 'HTTP_HOST', message }],
      exit: 2,
    });
  });
});
