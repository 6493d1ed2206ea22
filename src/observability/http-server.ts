import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { StartUpSteps } from '../start-up.ts';

export interface OpsServerOptions {
  host: string;
  port: number;
  registry: Registry;
  /** Liveness: the process loop is alive. */
  healthy: () => boolean;
  /** Readiness: connected and doing its job; the reason is shown when not ready. */
  ready: () => { ready: boolean; reason?: string };
  logger: Logger;
  /**
   * A component's own routes, served beside the ops endpoints: called first for every request, it
   * answers and returns true, or returns false to leave the request to the ops endpoints.
   */
  routes?: (req: IncomingMessage, res: ServerResponse, path: string) => boolean;
}

export interface OpsServer {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

/** A listen failure that HTTP_PORT or HTTP_HOST caused, as a configuration error naming it; others as they are. */
function listenError(err: unknown, { host, port }: OpsServerOptions): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const problem = (variable: string, message: string) => new ConfigError([{ variable, message }]);
  if (code === 'EADDRINUSE') return problem('HTTP_PORT', `${port} is already in use on ${host}`);
  if (code === 'EACCES') return problem('HTTP_PORT', `${port}: not allowed to listen on this port`);
  if (code === 'ENOTFOUND') return problem('HTTP_HOST', `${host} does not resolve`);
  if (code === 'EADDRNOTAVAIL') return problem('HTTP_HOST', `${host} is not an address of this machine`);
  return err;
}

/** `/metrics` (Prometheus text format), `/healthz` and `/readyz` for one component, beside its own routes. */
export function createOpsServer(options: OpsServerOptions): OpsServer {
  let server: Server | undefined;
  const handler: Parameters<typeof createServer>[1] = (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (options.routes?.(req, res, path)) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
        (err: unknown) => {
          options.logger.error({ err }, 'metrics collection failed');
          res.writeHead(500).end();
        },
      );
      return;
    }
    if (path === '/healthz') {
      const ok = options.healthy();
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ healthy: ok }));
      return;
    }
    if (path === '/readyz') {
      const state = options.ready();
      res
        .writeHead(state.ready ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify(state));
      return;
    }
    res.writeHead(404).end();
  };
  return {
    async start() {
      server = createServer(handler);
      server.keepAliveTimeout = 5000;
      await new Promise<void>((resolve, reject) => {
        server?.once('error', (err) => reject(listenError(err, options)));
        server?.listen(options.port, options.host, () => resolve());
      });
      const { port } = server.address() as AddressInfo;
      const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
      return { url: `http://${host}:${port}` };
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}

/** What a component gives the ops server it starts first, before anything it waits for. */
export interface FirstOpsServerOptions {
  registry: Registry;
  healthy: () => boolean;
  /** The wired component's readiness; undefined while start-up still runs, which /readyz then reports. */
  ready: () => { ready: boolean; reason?: string } | undefined;
  logger: Logger;
}

/**
 * A component's ops server, listening before the broker or the registry is reached, so that /readyz
 * says what start-up waits for; released with what else start-up created.
 */
export async function startOpsServerFirst(
  { step, created, readiness }: StartUpSteps,
  http: { host: string; port: number },
  options: FirstOpsServerOptions,
): Promise<{ ops: OpsServer; url: string }> {
  const ops = createOpsServer({ ...http, ...options, ready: () => options.ready() ?? readiness() });
  created(ops, (o) => o.stop());
  const { url } = await step('starting the ops server', ops.start());
  return { ops, url };
}
