import { request } from 'undici';
import { afterAll } from 'vitest';
import { createSandbox, type ExportRow, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts';

/** A sandbox on a free port with no background changes and no rate limit unless asked; stopped after the file. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const sandbox = createSandbox({ port: 0, changesPerSec: 0, rateLimit: 0, ...options });
  await sandbox.start();
  afterAll(() => sandbox.stop());
  return sandbox;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** One request with undici; the body is parsed as JSON. */
export async function call(
  base: string,
  path: string,
  options: {
    key?: string;
    method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
    body?: unknown;
    raw?: string;
    /** Of a request with a body; default application/json, null for none. */
    contentType?: string | null;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  const payload = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const contentType = options.contentType === undefined ? 'application/json' : options.contentType;
  if (payload !== undefined && contentType !== null) headers['content-type'] = contentType;
  const res = await request(`${base}${path}`, {
    method: options.method ?? (payload === undefined ? 'GET' : 'POST'),
    headers,
    ...(payload !== undefined && { body: payload }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

export type Row = Record<string, unknown> & Partial<ExportRow>;

export interface ExportPage {
  rows: Row[];
  nextCursor: string | null;
}

export function exportPath(from: { cursor?: string; updatedAfter?: string }, cursorParam = 'cursor'): string {
  const query = new URLSearchParams();
  if (from.updatedAfter !== undefined) query.set('updatedAfter', from.updatedAfter);
  if (from.cursor !== undefined) query.set(cursorParam, from.cursor);
  const text = query.toString();
  return `/sharing/v1/alerts/export${text ? `?${text}` : ''}`;
}

export async function exportPage(
  sandbox: Sandbox,
  key: string,
  from: { cursor?: string; updatedAfter?: string } = {},
): Promise<ExportPage> {
  const answer = await call(sandbox.url, exportPath(from), { key });
  if (answer.status !== 200)
    throw new Error(`export answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body as ExportPage;
}

/**
 * Walks the feed with the cursor until nextCursor is null; `between` runs after each page (e.g. to
 * change alerts mid-walk).
 */
export async function walk(
  sandbox: Sandbox,
  key = 'sandbox-key',
  from: { updatedAfter?: string } = {},
  between?: (page: number) => void,
): Promise<{ rows: Row[]; pages: number }> {
  const rows: Row[] = [];
  let page = await exportPage(sandbox, key, from);
  let pages = 1;
  for (;;) {
    rows.push(...page.rows);
    if (page.nextCursor === null) return { rows, pages };
    between?.(pages);
    page = await exportPage(sandbox, key, { cursor: page.nextCursor });
    pages++;
  }
}

export const epochOf = (at: unknown): number => (typeof at === 'number' ? at : Date.parse(String(at)));

/** Identity of one row change: the same alert in the same state at the same instant. */
export const versionOf = (row: Row) => `${String(row.id)}@${epochOf(row.updatedAt)}`;
