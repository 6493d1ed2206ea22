import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AlertState } from '../alert-events.ts';
import { InvalidInputError } from '../errors.ts';
import { HttpRefusal, readBody } from '../http-body.ts';
import { parseInstant } from '../instant.ts';
import type { Logger } from '../logger.ts';
import { loadSchema, SchemaNames } from '../schemas.ts';
import { tablePage } from './page/page.ts';
import { type AlertTable, type ListQuery, MAX_PAGE } from './table.ts';

/** The most IBANs one POST /v1/alerts/lookup takes. */
export const MAX_LOOKUP_IBANS = 1000;
/** The largest request body taken (1,000 IBANs in their longest spellings, with room to spare). */
export const MAX_BODY_BYTES = 128 * 1024;

export interface TableRoutesOptions {
  table: AlertTable;
  /** When set, every /v1 call needs one of them in `x-api-key`. */
  apiKeys?: readonly string[] | undefined;
  logger: Logger;
}

type Route = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

const QUALIFICATIONS = new Set(
  (
    loadSchema(SchemaNames.AlertUpserted) as unknown as {
      fields: { name: string; type: { symbols?: string[] } }[];
    }
  ).fields.find((f) => f.name === 'qualification')?.type.symbols ?? [],
);

/** An alert as the HTTP API shows it: instants as ISO-8601. */
export function alertJson(alert: AlertState) {
  return {
    iban: alert.iban,
    alertId: alert.alertId,
    bic: alert.bic,
    qualification: alert.qualification,
    qualificationRaw: alert.qualificationRaw,
    reportsCount: alert.reportsCount,
    updatedAt: new Date(alert.updatedAt).toISOString(),
    eventId: alert.eventId,
  };
}

const digest = (key: string) => createHash('sha256').update(key).digest();

/** Checks a presented key against every configured one in constant time (hashes of equal length). */
function keyChecker(apiKeys: readonly string[]): (presented: string | undefined) => boolean {
  const expected = apiKeys.map(digest);
  return (presented) => {
    const given = digest(presented ?? '');
    let match = false;
    for (const key of expected) match = timingSafeEqual(key, given) || match;
    return presented !== undefined && match;
  };
}

function ibansOf(body: Buffer): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpRefusal(400, 'INVALID_JSON', 'the body is not JSON');
  }
  const ibans = (parsed as { ibans?: unknown } | null)?.ibans;
  if (!Array.isArray(ibans) || !ibans.every((i) => typeof i === 'string')) {
    throw new HttpRefusal(400, 'INVALID_BODY', 'the body must be {"ibans": [strings]}');
  }
  if (ibans.length > MAX_LOOKUP_IBANS) {
    throw new HttpRefusal(400, 'TOO_MANY_IBANS', `at most ${MAX_LOOKUP_IBANS} IBANs per lookup`);
  }
  return ibans;
}

function listQueryOf(params: URLSearchParams): ListQuery {
  const query: ListQuery = {};
  const qualification = params.get('qualification');
  if (qualification) {
    if (!QUALIFICATIONS.has(qualification)) {
      throw new HttpRefusal(
        400,
        'INVALID_QUERY',
        `qualification must be one of ${[...QUALIFICATIONS].join(', ')}`,
      );
    }
    query.qualification = qualification;
  }
  const updatedAfter = params.get('updatedAfter');
  if (updatedAfter) {
    const ms = parseInstant(/^\d+$/.test(updatedAfter) ? Number(updatedAfter) : updatedAfter);
    if (ms === null) {
      throw new HttpRefusal(
        400,
        'INVALID_QUERY',
        'updatedAfter must be an ISO-8601 instant with a zone, or epoch ms',
      );
    }
    query.updatedAfter = ms;
  }
  const limit = params.get('limit');
  if (limit) {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || n < 1 || n > MAX_PAGE) {
      throw new HttpRefusal(400, 'INVALID_QUERY', `limit must be an integer from 1 to ${MAX_PAGE}`);
    }
    query.limit = n;
  }
  const cursor = params.get('cursor');
  if (cursor) query.cursor = cursor;
  return query;
}

const NOT_AN_IBAN = { code: 'INVALID_IBAN', message: 'not an IBAN' };
const NO_ACTIVE_ALERT = { code: 'NO_ACTIVE_ALERT', message: 'this IBAN has no active alert' };

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * The alert table's HTTP API (`/v1/...`) and its page (`GET /`), for the ops server's `routes`. Every
 * answer, the ops endpoints' too, carries the table's freshness headers. A bad request is answered
 * 4xx; a failure of the handler itself is answered 500 and logged: no request stops the service.
 */
export function tableRoutes({ table, apiKeys, logger }: TableRoutesOptions): Route {
  // The instant changes at each commit, not at each request: its text is made once per value.
  let updatedAtText = { at: undefined as number | undefined, text: 'never' };
  const updatedAtHeader = (at: number | undefined) => {
    if (at !== updatedAtText.at)
      updatedAtText = { at, text: at === undefined ? 'never' : new Date(at).toISOString() };
    return updatedAtText.text;
  };
  const keyAccepted = apiKeys && apiKeys.length > 0 ? keyChecker(apiKeys) : undefined;
  const page = tablePage({ apiKeyField: keyAccepted !== undefined, maxIbans: MAX_LOOKUP_IBANS });

  /** One IBAN's answer, written at once: the hot path, with no promise and no exception per request. */
  const getOne = (res: ServerResponse, encoded: string) => {
    let raw: string;
    try {
      raw = decodeURIComponent(encoded);
    } catch {
      send(res, 400, NOT_AN_IBAN);
      return;
    }
    const [result] = table.lookup([raw]);
    if (!result || result.invalid) send(res, 400, NOT_AN_IBAN);
    else if (!result.alert) send(res, 404, NO_ACTIVE_ALERT);
    else send(res, 200, alertJson(result.alert));
  };

  const lookup = async (req: IncomingMessage, res: ServerResponse) => {
    const tooLarge = new HttpRefusal(
      413,
      'BODY_TOO_LARGE',
      `the body must be at most ${MAX_BODY_BYTES} bytes`,
    );
    const ibans = ibansOf(await readBody(req, MAX_BODY_BYTES, tooLarge));
    const results = table.lookup(ibans).map((r) => ({
      iban: r.iban,
      alert: r.alert && alertJson(r.alert),
      ...(r.invalid && { error: 'INVALID_IBAN' }),
    }));
    send(res, 200, { results });
  };

  const list = (res: ServerResponse, params: URLSearchParams) => {
    let page: ReturnType<AlertTable['list']>;
    try {
      page = table.list(listQueryOf(params));
    } catch (err) {
      if (err instanceof InvalidInputError) throw new HttpRefusal(400, err.rule, err.message);
      throw err;
    }
    send(res, 200, { alerts: page.alerts.map(alertJson), nextCursor: page.nextCursor });
  };

  const authorize = (req: IncomingMessage) => {
    const header = req.headers['x-api-key'];
    if (keyAccepted && !keyAccepted(typeof header === 'string' ? header : undefined)) {
      throw new HttpRefusal(401, 'UNAUTHORIZED', 'a valid x-api-key header is required');
    }
  };

  /** `GET /v1/alerts/{iban}` answered synchronously; false for any other request. */
  const getOneAnswered = (req: IncomingMessage, res: ServerResponse, path: string): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (!path.startsWith('/v1/alerts/') || path === '/v1/alerts/lookup') return false;
    const rest = path.slice('/v1/alerts/'.length);
    if (rest.length === 0 || rest.includes('/')) return false;
    authorize(req);
    getOne(res, rest);
    return true;
  };

  const v1 = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    authorize(req);
    const read = req.method === 'GET' || req.method === 'HEAD';
    if (path === '/v1/alerts/lookup') {
      if (req.method !== 'POST') throw new HttpRefusal(405, 'METHOD_NOT_ALLOWED', 'use POST');
      return lookup(req, res);
    }
    if (path === '/v1/alerts' || path.startsWith('/v1/alerts/')) {
      if (!read) throw new HttpRefusal(405, 'METHOD_NOT_ALLOWED', 'use GET');
      if (path === '/v1/alerts') return list(res, new URL(req.url ?? '/', 'http://table').searchParams);
      const rest = path.slice('/v1/alerts/'.length);
      if (rest.length > 0 && !rest.includes('/')) return getOne(res, rest);
    }
    throw new HttpRefusal(404, 'NOT_FOUND', 'no such endpoint');
  };

  const failed = (res: ServerResponse, err: unknown) => {
    if (err instanceof HttpRefusal) {
      // A body refused part-way is left unread: the connection closes after the answer.
      const close: Record<string, string> = err.status === 413 ? { connection: 'close' } : {};
      send(res, err.status, { code: err.code, message: err.message }, close);
      return;
    }
    logger.error({ err }, 'answering a table request failed');
    send(res, 500, { code: 'INTERNAL', message: 'the request could not be answered' });
  };

  return (req, res, path) => {
    const status = table.status();
    res.setHeader('x-table-offset-lag', String(status.offsetLag));
    res.setHeader('x-table-updated-at', updatedAtHeader(status.updatedAt));
    if (path === '/' || path === '/index.html') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return false;
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': page.csp,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-cache',
      });
      res.end(page.html);
      return true;
    }
    if (path !== '/v1' && !path.startsWith('/v1/')) return false;
    try {
      if (!getOneAnswered(req, res, path)) v1(req, res, path).catch((err: unknown) => failed(res, err));
    } catch (err) {
      failed(res, err);
    }
    return true;
  };
}
