import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { type Logger, silentLogger } from '../logger.ts';
import { exportFeed, getAlert, json, problem, type Reply, search, verify } from './routes.ts';
import { type MalformedKind, World } from './world.ts';

export interface SandboxFaults {
  latencyMs: number;
  /** Share of requests answered 503. */
  errorRate: number;
  /** Share of requests whose connection is destroyed mid-response. */
  resetRate: number;
  /** The next N export requests of every tenant answer 429. */
  burst429: number;
  /** Share of changes that also put a malformed row in the feed. */
  malformedRowRate: number;
}

export interface SandboxOptions {
  host?: string;
  port?: number;
  apiKeys?: string[];
  alerts?: number;
  seed?: number;
  changesPerSec?: number;
  pageSize?: number;
  /** Export requests per second per tenant; 0 = unlimited. */
  rateLimit?: number;
  cursorParam?: string;
  faults?: Partial<SandboxFaults>;
  tls?: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer; requestClientCert?: boolean };
  logger?: Logger;
  now?: () => number;
}

export interface SandboxRequest {
  at: number;
  method: string;
  path: string;
  query: Record<string, string>;
  tenant?: string;
  status: number;
}

export interface Sandbox {
  start(): Promise<{ url: string; apiKeys: string[] }>;
  stop(): Promise<void>;
  readonly url: string;
  setFaults(faults: Partial<SandboxFaults>): void;
  faults(): SandboxFaults;
  requestLog(): readonly SandboxRequest[];
  clearRequestLog(): void;
  applyChanges(count: number): void;
  injectMalformedRow(kind?: MalformedKind): MalformedKind;
  currentRows(): Record<string, unknown>[];
  holderName(iban: string): string;
}

const LOG_LIMIT = 100_000;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const apiKeys = options.apiKeys && options.apiKeys.length > 0 ? options.apiKeys : ['sandbox-key'];
  const now = options.now ?? Date.now;
  const logger = options.logger ?? silentLogger();
  const world = new World({ apiKeys, alerts: options.alerts ?? 1000, seed: options.seed ?? 1, now });
  const pageSize = options.pageSize ?? 500;
  const rateLimit = options.rateLimit ?? 10;
  const cursorParam = options.cursorParam ?? 'cursor';
  const faults: SandboxFaults = {
    latencyMs: 0,
    errorRate: 0,
    resetRate: 0,
    burst429: 0,
    malformedRowRate: 0,
    ...options.faults,
  };
  const burstLeft = new Map<string, number>();
  const buckets = new Map<string, { tokens: number; at: number }>();
  let log: SandboxRequest[] = [];
  let server: Server | undefined;
  let url = '';
  let ticker: NodeJS.Timeout | undefined;

  const setFaults = (f: Partial<SandboxFaults>) => {
    Object.assign(faults, f);
    if (f.burst429 !== undefined) burstLeft.clear();
  };

  /** Token bucket per tenant; answers the seconds to wait when empty. */
  const throttle = (tenant: string): number | undefined => {
    if ((burstLeft.get(tenant) ?? faults.burst429) > 0) {
      burstLeft.set(tenant, (burstLeft.get(tenant) ?? faults.burst429) - 1);
      return 1;
    }
    if (rateLimit <= 0) return undefined;
    const t = now();
    const bucket = buckets.get(tenant) ?? { tokens: rateLimit, at: t };
    bucket.tokens = Math.min(rateLimit, bucket.tokens + ((t - bucket.at) / 1000) * rateLimit);
    bucket.at = t;
    buckets.set(tenant, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / rateLimit));
  };

  const admin = async (req: IncomingMessage, path: string): Promise<Reply> => {
    if (path === '/__admin/faults' && req.method === 'GET') return json(200, faults);
    if (path === '/__admin/faults' && req.method === 'PUT') {
      setFaults(JSON.parse((await readBody(req)) || '{}') as Partial<SandboxFaults>);
      return json(200, faults);
    }
    if (path === '/__admin/requests' && req.method === 'GET') return json(200, log);
    if (path === '/__admin/requests' && req.method === 'DELETE') {
      log = [];
      return json(200, { cleared: true });
    }
    if (path === '/__admin/changes' && req.method === 'POST') {
      const { count = 1 } = JSON.parse((await readBody(req)) || '{}') as { count?: number };
      world.applyChanges(count, faults.malformedRowRate);
      return json(200, { applied: count });
    }
    if (path === '/__admin/rows' && req.method === 'GET') return json(200, world.currentRows());
    return problem(404, 'NOT_FOUND', `no admin route ${req.method} ${path}`);
  };

  const route = async (
    req: IncomingMessage,
    path: string,
    query: URLSearchParams,
    tenantId: (t: string) => void,
  ) => {
    const key = req.headers['x-api-key'];
    const tenant = typeof key === 'string' ? world.tenantOf(key) : undefined;
    if (!tenant) return problem(401, 'UNAUTHORIZED', 'missing or unknown x-api-key');
    tenantId(tenant.id);
    if (faults.errorRate > 0 && Math.random() < faults.errorRate) {
      return problem(503, 'UNAVAILABLE', 'injected upstream failure');
    }
    const body = async (): Promise<unknown> => {
      const text = await readBody(req);
      try {
        return JSON.parse(text);
      } catch {
        return Symbol.for('invalid');
      }
    };
    if (req.method === 'GET' && path === '/sharing/v1/alerts/export') {
      const wait = throttle(tenant.id);
      if (wait !== undefined) {
        return problem(429, 'RATE_LIMITED', 'export rate limit exceeded for this tenant', {
          'retry-after': String(wait),
        });
      }
      return exportFeed(world, query, cursorParam, pageSize);
    }
    if (
      req.method === 'POST' &&
      (path === '/sharing/v1/alerts/sent/search' || path === '/sharing/v1/alerts/received/search')
    ) {
      const b = await body();
      if (typeof b === 'symbol') return problem(400, 'INVALID_BODY', 'body is not JSON');
      return search(world, tenant, b, path.includes('/sent/'));
    }
    if (req.method === 'POST' && path === '/vop/v1/verify') {
      const b = await body();
      if (typeof b === 'symbol') return problem(400, 'INVALID_BODY', 'body is not JSON');
      return verify(world, b);
    }
    const one = /^\/sharing\/v1\/alerts\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && one) return getAlert(world, decodeURIComponent(one[1] ?? ''));
    return problem(404, 'NOT_FOUND', `no route ${req.method} ${path}`);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parsed = new URL(req.url ?? '/', 'http://sandbox');
    const path = parsed.pathname;
    const entry: SandboxRequest = {
      at: now(),
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(parsed.searchParams),
      status: 0,
    };
    let reply: Reply;
    try {
      if (path.startsWith('/__admin/')) reply = await admin(req, path);
      else {
        if (faults.latencyMs > 0) await new Promise((r) => setTimeout(r, faults.latencyMs));
        reply = await route(req, path, parsed.searchParams, (t) => {
          entry.tenant = t;
        });
      }
    } catch (err) {
      logger.error({ err }, 'sandbox request failed');
      reply = problem(500, 'INTERNAL', 'sandbox failure');
    }
    entry.status = reply.status;
    if (!path.startsWith('/__admin/')) {
      log.push(entry);
      if (log.length > LOG_LIMIT) log = log.slice(-LOG_LIMIT / 2);
    }
    res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
    if (!path.startsWith('/__admin/') && faults.resetRate > 0 && Math.random() < faults.resetRate) {
      // Headers and half a body, then the connection drops.
      res.write(reply.body.slice(0, Math.floor(reply.body.length / 2)));
      entry.status = -1;
      req.socket.destroy();
      return;
    }
    res.end(reply.body);
  };

  return {
    async start() {
      const listener = (req: IncomingMessage, res: ServerResponse) => void handle(req, res);
      server = options.tls
        ? createHttpsServer(
            {
              cert: options.tls.cert,
              key: options.tls.key,
              ...(options.tls.ca && { ca: options.tls.ca }),
              requestCert: options.tls.requestClientCert ?? false,
              rejectUnauthorized: options.tls.requestClientCert ?? false,
            },
            listener,
          )
        : createHttpServer(listener);
      server.keepAliveTimeout = 60_000;
      await new Promise<void>((resolve, reject) => {
        server?.once('error', reject);
        server?.listen(options.port ?? 8080, options.host ?? '127.0.0.1', () => resolve());
      });
      const { port } = server.address() as AddressInfo;
      url = `${options.tls ? 'https' : 'http'}://${options.host ?? '127.0.0.1'}:${port}`;
      const rate = options.changesPerSec ?? 5;
      if (rate > 0) {
        // Ticks of up to 10 per second; each tick's changes share one millisecond.
        const tickMs = Math.max(100, Math.round(1000 / rate));
        const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
        ticker = setInterval(() => world.applyChanges(perTick, faults.malformedRowRate), tickMs);
        ticker.unref();
      }
      logger.info({ url, alerts: world.alerts.length, tenants: apiKeys.length }, 'sandbox ready');
      return { url, apiKeys };
    },
    async stop() {
      if (ticker) clearInterval(ticker);
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    get url() {
      return url;
    },
    setFaults,
    faults: () => ({ ...faults }),
    requestLog: () => log,
    clearRequestLog: () => {
      log = [];
    },
    applyChanges: (count) => world.applyChanges(count, faults.malformedRowRate),
    injectMalformedRow: (kind) => world.injectMalformed(kind),
    currentRows: () => world.currentRows(),
    holderName: (iban) => world.holderName(iban),
  };
}
