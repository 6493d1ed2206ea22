import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
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
