import { parseInstant } from '../instant.ts';
import { QUALIFICATIONS } from './alerts.ts';
import type { Institution } from './data.ts';
import { reportsOf, summaryOf } from './details.ts';
import { json, problem, type Reply } from './reply.ts';
import type { World } from './world.ts';

export const MAX_SEARCH_PAGE_SIZE = 500;
export const DEFAULT_SEARCH_PAGE_SIZE = 20;

interface Filters {
  iban?: string;
  qualification?: number;
  updatedFrom?: number;
  updatedTo?: number;
  bic?: string;
  author?: number;
  page: number;
  pageSize: number;
}

/** Reads the filters of a search body, or answers the message of the first bad one. */
export function parseFilters(body: unknown, sent: boolean, world: World): Filters | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body must be a JSON object';
  const b = body as Record<string, unknown>;
  const allowed = ['iban', 'qualification', 'updatedFrom', 'updatedTo', 'page', 'pageSize'];
  if (sent) allowed.push('bic', 'author');
  const unknown = Object.keys(b).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) return `unknown filter(s): ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`;
  const filters: Filters = { page: 1, pageSize: DEFAULT_SEARCH_PAGE_SIZE };
  for (const k of ['iban', 'qualification', 'bic', 'author'] as const) {
    if (b[k] !== undefined && (typeof b[k] !== 'string' || b[k] === ''))
      return `${k} must be a non-empty string`;
  }
  if (typeof b.iban === 'string') filters.iban = b.iban.replace(/\s+/g, '').toUpperCase();
  if (typeof b.bic === 'string') filters.bic = b.bic.toUpperCase();
  if (typeof b.qualification === 'string') {
    filters.qualification = QUALIFICATIONS.indexOf(b.qualification as (typeof QUALIFICATIONS)[number]);
    if (filters.qualification < 0) return `qualification must be one of ${QUALIFICATIONS.join(', ')}`;
  }
  if (typeof b.author === 'string') {
    const id = b.author.toUpperCase();
    // An author no institution has simply matches nothing.
    filters.author = world.institutions.find((i) => i.id === id)?.index ?? -1;
  }
  for (const k of ['updatedFrom', 'updatedTo'] as const) {
    if (b[k] === undefined) continue;
    // Strict: a date that does not exist (February 30) is refused, not rolled over into March.
    const at = typeof b[k] === 'string' ? parseInstant(b[k]) : null;
    if (at === null) return `${k} must be an ISO-8601 instant, e.g. 2026-11-22T09:30:00.000Z`;
    filters[k] = at;
  }
  for (const [k, max] of [
    ['page', 1_000_000],
    ['pageSize', MAX_SEARCH_PAGE_SIZE],
  ] as const) {
    const n = b[k];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max)
      return `${k} must be an integer from 1 to ${max}`;
    filters[k] = n;
  }
  return filters;
}

function matches(world: World, index: number, f: Filters, tenant: Institution, sent: boolean): boolean {
  const a = world.alerts;
  if (f.iban !== undefined && a.iban[index] !== f.iban) return false;
  if (f.qualification !== undefined && a.qualification[index] !== f.qualification) return false;
  const at = a.updatedAt[index] as number;
  if (f.updatedFrom !== undefined && at < f.updatedFrom) return false;
  if (f.updatedTo !== undefined && at > f.updatedTo) return false;
  if (!sent) return a.holder[index] === tenant.index;
  const mask = a.authorMask[index] as number;
  if ((mask & (1 << tenant.index)) === 0) return false;
  if (f.bic !== undefined && world.institutions[a.holder[index] ?? 0]?.bic !== f.bic) return false;
  if (f.author !== undefined && (f.author < 0 || (mask & (1 << f.author)) === 0)) return false;
  return true;
}

/**
 * Sent search: alerts with at least one report by the caller, reports split into myReports and
 * otherReports. Received search: alerts on accounts the caller holds. Newest update first; the
 * date range is inclusive at both ends.
 */
export function search(world: World, tenant: Institution, body: unknown, sent: boolean): Reply {
  const filters = parseFilters(body, sent, world);
  if (typeof filters === 'string') return problem(400, 'INVALID_FILTER', filters);
  const refs = world.feed.liveRefs();
  const found: number[] = [];
  for (let k = refs.length - 1; k >= 0; k--) {
    const index = refs[k] as number;
    if (index >= 0 && matches(world, index, filters, tenant, sent)) found.push(index);
  }
  const start = (filters.page - 1) * filters.pageSize;
  const alerts = found.slice(start, start + filters.pageSize).map((index) => {
    if (!sent) return summaryOf(world, index);
    const reports = reportsOf(world, index);
    return {
      ...summaryOf(world, index),
      myReports: reports.filter((r) => r.author === tenant.id),
      otherReports: reports.filter((r) => r.author !== tenant.id),
    };
  });
  return json(200, {
    page: filters.page,
    totalPages: Math.ceil(found.length / filters.pageSize),
    totalAlerts: found.length,
    alerts,
  });
}
