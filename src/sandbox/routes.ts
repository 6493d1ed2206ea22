import { type Alert, type Institution, reportsOf } from './data.ts';
import { decodeCursor, encodeCursor } from './feed.ts';
import { matchName } from './verify.ts';
import type { World } from './world.ts';

export interface Reply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

export const json = (status: number, value: unknown, headers?: Record<string, string>): Reply => ({
  status,
  body: JSON.stringify(value),
  ...(headers && { headers }),
});
export const problem = (status: number, code: string, message: string, headers?: Record<string, string>) =>
  json(status, { code, message }, headers);

export function exportFeed(
  world: World,
  query: URLSearchParams,
  cursorParam: string,
  pageSize: number,
): Reply {
  const cursorText = query.get(cursorParam);
  const afterText = query.get('updatedAfter');
  let from: { afterSeq?: number; updatedAfter?: number } = {};
  if (afterText !== null) {
    const at = Date.parse(afterText);
    if (Number.isNaN(at))
      return problem(400, 'INVALID_UPDATED_AFTER', 'updatedAfter must be an ISO-8601 instant');
    from.updatedAfter = at;
  }
  if (cursorText !== null) {
    const cursor = decodeCursor(cursorText);
    if (!cursor) return problem(400, 'INVALID_CURSOR', `${cursorParam} is not a cursor this service issued`);
    from = {
      afterSeq: cursor.seq,
      ...(cursor.updatedAfter !== undefined && { updatedAfter: cursor.updatedAfter }),
    };
  }
  const page = world.feed.page(from, pageSize);
  const next = page.lastSeq === null ? 'null' : JSON.stringify(encodeCursor(page.lastSeq, from.updatedAfter));
  // Rows are kept serialised; a page is a join, never a re-serialisation.
  return { status: 200, body: `{"rows":[${page.rows.join(',')}],"nextCursor":${next}}` };
}

interface Filters {
  iban?: string;
  qualification?: string;
  updatedFrom?: number;
  updatedTo?: number;
  bic?: string;
  author?: string;
  page: number;
  pageSize: number;
}

function parseFilters(body: unknown, sent: boolean): Filters | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body must be a JSON object';
  const b = body as Record<string, unknown>;
  const allowed = [
    'iban',
    'qualification',
    'updatedFrom',
    'updatedTo',
    'page',
    'pageSize',
    ...(sent ? ['bic', 'author'] : []),
  ];
  const unknown = Object.keys(b).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) return `unknown filter(s): ${unknown.join(', ')}`;
  const filters: Filters = { page: 1, pageSize: 20 };
  for (const k of ['iban', 'qualification', 'bic', 'author'] as const) {
    if (b[k] !== undefined) {
      if (typeof b[k] !== 'string') return `${k} must be a string`;
      filters[k] = b[k] as string;
    }
  }
  for (const k of ['updatedFrom', 'updatedTo'] as const) {
    if (b[k] !== undefined) {
      const at = typeof b[k] === 'string' ? Date.parse(b[k] as string) : Number.NaN;
      if (Number.isNaN(at)) return `${k} must be an ISO-8601 instant`;
      filters[k] = at;
    }
  }
  for (const [k, max] of [
    ['page', 1_000_000],
    ['pageSize', 500],
  ] as const) {
    if (b[k] !== undefined) {
      const n = b[k];
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max)
        return `${k} must be an integer from 1 to ${max}`;
      filters[k] = n;
    }
  }
  return filters;
}

function summary(alert: Alert) {
  return {
    id: alert.numericId ? Number(alert.id) : alert.id,
    iban: alert.iban,
    bic: alert.bic,
    qualification: alert.qualification,
    reportsCount: alert.reportsCount,
    sightingsCount: alert.sightingsCount,
    falsePositivesCount: alert.falsePositivesCount,
    updatedAt: new Date(alert.updatedAt).toISOString(),
    isActive: alert.isActive,
  };
}

export function search(world: World, tenant: Institution, body: unknown, sent: boolean): Reply {
  const filters = parseFilters(body, sent);
  if (typeof filters === 'string') return problem(400, 'INVALID_FILTER', filters);
  const matches: unknown[] = [];
  for (const alert of world.alerts) {
    if (filters.iban !== undefined && alert.iban !== filters.iban.replace(/\s+/g, '').toUpperCase()) continue;
    if (filters.qualification !== undefined && alert.qualification !== filters.qualification) continue;
    if (filters.updatedFrom !== undefined && alert.updatedAt < filters.updatedFrom) continue;
    if (filters.updatedTo !== undefined && alert.updatedAt > filters.updatedTo) continue;
    if (filters.bic !== undefined && alert.bic !== filters.bic) continue;
    if (sent) {
      const reports = reportsOf(alert, world.institutions);
      const mine = reports.filter((r) => r.author === tenant.id);
      if (mine.length === 0) continue;
      if (filters.author !== undefined && !reports.some((r) => r.author === filters.author)) continue;
      matches.push({
        ...summary(alert),
        myReports: mine,
        otherReports: reports.filter((r) => r.author !== tenant.id),
      });
    } else {
      if (alert.holder !== tenant.id) continue;
      matches.push(summary(alert));
    }
  }
  const totalPages = Math.max(1, Math.ceil(matches.length / filters.pageSize));
  const start = (filters.page - 1) * filters.pageSize;
  return json(200, {
    page: filters.page,
    totalPages,
    totalAlerts: matches.length,
    alerts: matches.slice(start, start + filters.pageSize),
  });
}

export function getAlert(world: World, id: string): Reply {
  const alert = world.alerts.find((a) => a.id === id);
  if (!alert) return problem(404, 'ALERT_NOT_FOUND', `no alert ${id}`);
  const reports = reportsOf(alert, world.institutions);
  return json(200, {
    ...summary(alert),
    reports: reports.map((r) => ({ ...r, markedForDeletion: r.markedForDeletion })),
    qualificationNotes:
      alert.qualification === 'REJECTED' ? [{ by: 'holder', note: 'customer confirmed the payee' }] : [],
    observations: reports
      .slice(0, 1)
      .map((r) => ({ participant: r.author, note: 'seen on outgoing transfer' })),
    comments: [],
  });
}

export function verify(world: World, body: unknown): Reply {
  const b = body as { iban?: unknown; party?: { name?: unknown } } | null;
  if (typeof b !== 'object' || b === null || Array.isArray(b))
    return problem(400, 'INVALID_BODY', 'body must be a JSON object');
  if (typeof b.iban !== 'string' || b.iban.trim() === '')
    return problem(400, 'INVALID_BODY', 'iban must be a non-empty string');
  const name = b.party?.name;
  if (typeof name !== 'string' || name.trim() === '')
    return problem(400, 'INVALID_BODY', 'party.name must be a non-empty string');
  const iban = b.iban.replace(/\s+/g, '').toUpperCase();
  return json(200, matchName(iban, name, world.holderName(iban)));
}
