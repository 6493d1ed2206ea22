import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { FraudlinkError } from '../errors.ts';
import { HttpRefusal as Refused, readBody } from '../http-body.ts';
import type { Logger } from '../logger.ts';
import { holderNameFor } from './data.ts';
import { checkFaults, type FaultState, type RateLimiter } from './faults.ts';
import { json, problem, type Reply } from './reply.ts';
import type { RequestLog, SandboxRequest } from './request-log.ts';
import { exportFeed, getAlert } from './routes.ts';
import { search } from './search.ts';
import { verify } from './verify.ts';
import { MALFORMED_KINDS, type MalformedKind, type World } from './world.ts';

export interface HandlerDeps {
  world: World;
  faults: FaultState;
  limiter: RateLimiter;
  log: RequestLog;
  logger: Logger;
  basePath: string;
  cursorParam: string;
  pageSize: number;
  now: () => number;
  applyChanges: (count: number) => void;
}

const MAX_BODY = 1 << 20;
const EXPORT = '/sharing/v1/alerts/export';
const SENT_SEARCH = '/sharing/v1/alerts/sent/search';
const RECEIVED_SEARCH = '/sharing/v1/alerts/received/search';
const VERIFY = '/vop/v1/verify';
const ONE_ALERT = /^\/sharing\/v1\/alerts\/([^/]+)$/;

/** The method an API path answers; undefined for a path the service does not have. */
function apiMethodOf(path: string): string | undefined {
  if (path === EXPORT || ONE_ALERT.test(path)) return 'GET';
  if (path === SENT_SEARCH || path === RECEIVED_SEARCH || path === VERIFY) return 'POST';
  return undefined;
}

/**
 * The method a request is routed by: HEAD is GET without the body (RFC 9110 §9.3.2), same status and
 * headers; Node's response leaves out the body of a HEAD itself.
 */
const routedAs = (method: string) => (method === 'HEAD' ? 'GET' : method);

/** A known path asked with a method it does not answer: 405 with the Allow header (RFC 9110 §15.5.6). */
function notAllowed(method: string, path: string, allowed: readonly string[]): Reply {
  const allow = allowed.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])).join(', ');
  return problem(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${path} (allowed: ${allow})`, {
    allow,
  });
}

/** The body, up to `MAX_BODY` (http-body.ts): the 413 closes the connection. */
const bodyOf = (req: IncomingMessage): Promise<Buffer> =>
  readBody(req, MAX_BODY, new Refused(413, 'PAYLOAD_TOO_LARGE', 'body larger than 1 MiB'));

/**
 * The JSON body of a request, API or admin alike: the interface says "requests with a body carry
 * Content-Type: application/json", so a body of any other type, or of none declared, is refused
 * unread (415).
 */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const { 'content-length': length, 'transfer-encoding': chunked, 'content-type': type } = req.headers;
  const hasBody = chunked !== undefined || (length !== undefined && length !== '0');
  const mediaType = type?.split(';')[0]?.trim().toLowerCase();
  if (hasBody && mediaType !== 'application/json') {
    const got = type === undefined ? 'none' : JSON.stringify(type.slice(0, 100));
    throw new Refused(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Type must be application/json, got ${got}`);
  }
  const text = (await bodyOf(req)).toString('utf8');
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new Refused(400, 'INVALID_BODY', 'body is not JSON');
  }
}

/** The service's five endpoints behind the x-api-key check. */
async function api(
  deps: HandlerDeps,
  req: IncomingMessage,
  path: string,
  query: URLSearchParams,
  entry: SandboxRequest,
) {
  const { world } = deps;
  const key = req.headers['x-api-key'];
  const tenant = typeof key === 'string' ? world.tenantOf(key) : undefined;
  if (!tenant) return problem(401, 'UNAUTHORIZED', 'missing or unknown x-api-key');
  entry.tenant = tenant.id;
  if (deps.faults.roll(deps.faults.current.errorRate)) {
    return problem(503, 'SERVICE_UNAVAILABLE', 'injected upstream failure');
  }
  const asked = req.method ?? 'GET';
  const method = routedAs(asked);
  if (method === 'GET' && path === EXPORT) {
    const wait = deps.faults.takeBurst(tenant.id) ? 1 : deps.limiter.take(tenant.id);
    if (wait !== undefined) {
      return problem(429, 'RATE_LIMITED', 'export called too frequently for this tenant', {
        'retry-after': String(wait),
      });
    }
    return exportFeed(world, query, deps.cursorParam, deps.pageSize);
  }
  if (method === 'POST' && path === SENT_SEARCH) return search(world, tenant, await readJson(req), true);
  if (method === 'POST' && path === RECEIVED_SEARCH) return search(world, tenant, await readJson(req), false);
  if (method === 'POST' && path === VERIFY) return verify(await readJson(req));
  const one = ONE_ALERT.exec(path);
  if (method === 'GET' && one) return getAlert(world, one[1] ?? '');
  const allowed = apiMethodOf(path);
  if (allowed !== undefined) return notAllowed(asked, path, [allowed]);
  return problem(404, 'NOT_FOUND', `no route ${asked} ${path}`);
}

type AdminRoute = (deps: HandlerDeps, req: IncomingMessage, query: URLSearchParams) => Reply | Promise<Reply>;

/** Test and operator controls under /__admin, by path then method. */
const ADMIN_ROUTES: Record<string, Record<string, AdminRoute>> = {
  '/__admin/faults': {
    GET: (deps) => json(200, deps.faults.current),
    PUT: async (deps, req) => {
      deps.faults.set(checkFaults(await readJson(req)));
      return json(200, deps.faults.current);
    },
  },
  '/__admin/requests': {
    GET: (deps, _req, query) => {
      const text = query.get('limit');
      if (text !== null && !/^\d+$/.test(text))
        return problem(400, 'INVALID_QUERY', 'limit must be an integer of 0 or more');
      const entries = deps.log.entries();
      // Not slice(-limit): -0 is 0, which would answer the whole log for limit=0.
      return json(200, text === null ? entries : entries.slice(Math.max(0, entries.length - Number(text))));
    },
    DELETE: (deps) => {
      deps.log.clear();
      return json(200, { cleared: true });
    },
  },
  '/__admin/changes': {
    POST: async (deps, req) => {
      const body = ((await readJson(req)) ?? {}) as { count?: unknown };
      const count = body.count ?? 1;
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1_000_000)
        return problem(400, 'INVALID_BODY', 'count must be an integer from 1 to 1000000');
      deps.applyChanges(count);
      return json(200, { applied: count });
    },
  },
  '/__admin/malformed': {
    POST: async (deps, req) => {
      const body = ((await readJson(req)) ?? {}) as { kind?: unknown };
      if (body.kind !== undefined && !MALFORMED_KINDS.includes(body.kind as MalformedKind))
        return problem(400, 'INVALID_BODY', `kind must be one of ${MALFORMED_KINDS.join(', ')}`);
      return json(200, { kind: deps.world.injectMalformed(body.kind as MalformedKind | undefined) });
    },
  },
  '/__admin/rows': { GET: (deps) => json(200, deps.world.currentRows()) },
  '/__admin/holder': {
    GET: (_deps, _req, query) => {
      const iban = query.get('iban');
      if (!iban) return problem(400, 'INVALID_QUERY', 'iban is required');
      return json(200, { iban, name: holderNameFor(iban) });
    },
  },
};

/** The admin route of the request: no key, no faults, not in the request log. */
function admin(deps: HandlerDeps, req: IncomingMessage, path: string, query: URLSearchParams) {
  const method = req.method ?? 'GET';
  const routes = Object.hasOwn(ADMIN_ROUTES, path) ? ADMIN_ROUTES[path] : undefined;
  if (routes === undefined) return problem(404, 'NOT_FOUND', `no admin route ${method} ${path}`);
  const routed = routedAs(method);
  const route = Object.hasOwn(routes, routed) ? routes[routed] : undefined;
  return route === undefined ? notAllowed(method, path, Object.keys(routes)) : route(deps, req, query);
}

function write(res: ServerResponse, reply: Reply, reset: boolean): void {
  const body = Buffer.from(reply.body);
  res.writeHead(reply.status, {
    'content-type': 'application/json',
    'content-length': String(body.length),
    ...reply.headers,
  });
  if (!reset) {
    res.end(body);
    return;
  }
  // Headers and half the body, then the connection drops once they are on the wire.
  res.write(body.subarray(0, body.length >> 1), () => res.destroy());
}

/** The sandbox's request handler; `createListener` wraps it for the HTTP server. */
export function createHandler(deps: HandlerDeps) {
  const prefix = deps.basePath;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // A request target such as `//[` is no URL: null here, answered 400 below, never thrown.
    const url = URL.parse(req.url ?? '/', 'http://sandbox');
    const pathname = url?.pathname ?? req.url ?? '/';
    const inBase = pathname === prefix || pathname.startsWith(`${prefix}/`);
    const path = inBase ? pathname.slice(prefix.length) || '/' : pathname;
    const isAdmin = url !== null && inBase && path.startsWith('/__admin/');
    const entry: SandboxRequest = {
      at: deps.now(),
      method: req.method ?? 'GET',
      path,
      query: url === null ? {} : Object.fromEntries(url.searchParams),
      status: 0,
    };
    let reply: Reply;
    try {
      if (url === null) reply = problem(400, 'INVALID_REQUEST', 'the request target is not a valid path');
      else if (!inBase) reply = problem(404, 'NOT_FOUND', `no route outside ${prefix}`);
      else if (isAdmin) reply = await admin(deps, req, path, url.searchParams);
      else {
        const latency = deps.faults.current.latencyMs;
        if (latency > 0) await delay(latency);
        reply = await api(deps, req, path, url.searchParams, entry);
      }
    } catch (err) {
      if (err instanceof Refused)
        reply = problem(err.status, err.code, err.message, err.status === 413 ? { connection: 'close' } : {});
      else if (err instanceof FraudlinkError) reply = problem(400, err.code, err.message);
      else {
        deps.logger.error({ err }, 'sandbox request failed');
        reply = problem(500, 'INTERNAL', 'sandbox failure');
      }
    }
    const reset = !isAdmin && deps.faults.roll(deps.faults.current.resetRate);
    entry.status = reset ? -1 : reply.status;
    if (!isAdmin) deps.log.add(entry);
    if (res.destroyed) return;
    write(res, reply, reset);
  };
}

/**
 * The server's listener: the handler's promise is never left floating, so whatever escapes it
 * (a bug) is logged and answered 500 instead of ending the process as an unhandled rejection.
 */
export function createListener(deps: HandlerDeps) {
  const handler = createHandler(deps);
  return (req: IncomingMessage, res: ServerResponse): void => {
    handler(req, res).catch((err: unknown) => {
      deps.logger.error({ err }, 'sandbox request failed');
      if (res.headersSent || res.destroyed) res.destroy();
      else write(res, problem(500, 'INTERNAL', 'sandbox failure'), false);
    });
  };
}
