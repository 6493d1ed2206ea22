import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, createApiClient } from '../../src/api/index.ts';
import {
  ErrorCodes,
  UpstreamClientError,
  UpstreamNotFoundError,
  UpstreamUnauthorizedError,
} from '../../src/errors.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.ts';

// The client against the real sandbox over HTTP, one endpoint after another.
let sandbox: Sandbox;
let client: ApiClient;
const apiKeys = ['tenant-a-key', 'tenant-b-key'];

beforeAll(async () => {
  sandbox = createSandbox({
    port: 0,
    apiKeys,
    alerts: 120,
    seed: 7,
    changesPerSec: 0,
    pageSize: 25,
    rateLimit: 0,
  });
  const { url } = await sandbox.start();
  client = createApiClient({ baseUrl: url, apiKey: 'tenant-a-key', timeoutMs: 5000 });
});

afterAll(async () => {
  await client?.close();
  await sandbox?.stop();
});

type Row = { id: string | number; iban: string; updatedAt: string | number; qualification: string };
const epochOf = (at: string | number) => (typeof at === 'number' ? at : Date.parse(at));

async function exportAll(api: ApiClient, from: { updatedAfter?: string } = {}) {
  const rows: Row[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await api.exportPage(cursor === undefined ? from : { cursor });
    pages++;
    rows.push(...(page.rows as Row[]));
    if (page.nextCursor === null) return { rows, pages };
    cursor = page.nextCursor;
  }
}

describe('export', () => {
  it('walks the feed with the cursor until nextCursor is null and returns every current row once', async () => {
    sandbox.clearRequestLog();
    const { rows, pages } = await exportAll(client);
    const expected = sandbox.currentRows();
    expect(rows.map((r) => String(r.id)).sort()).toEqual(expected.map((r) => String(r.id)).sort());
    expect(pages).toBeGreaterThan(1);
    const exports = sandbox.requestLog().filter((r) => r.path === '/sharing/v1/alerts/export');
    expect(exports[0]?.query).toEqual({});
    expect(exports.slice(1).every((r) => typeof r.query.cursor === 'string')).toBe(true);
  });

  it('reports the body size of each page', async () => {
    const page = await client.exportPage({});
    expect(page.bytes).toBeGreaterThan(JSON.stringify(page.rows).length);
  });

  it('resumes after updatedAfter, which is exclusive', async () => {
    const all = (await exportAll(client)).rows;
    const mark = epochOf(all[Math.floor(all.length / 2)]!.updatedAt);
    const { rows } = await exportAll(client, { updatedAfter: new Date(mark).toISOString() });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(all.length);
    expect(rows.every((r) => epochOf(r.updatedAt) > mark)).toBe(true);
  });

  it('sends the cursor under the configured query parameter name', async () => {
    const other = createSandbox({
      port: 0,
      alerts: 30,
      pageSize: 10,
      changesPerSec: 0,
      cursorParam: 'after',
    });
    const { url } = await other.start();
    const api = createApiClient({
      baseUrl: url,
      apiKey: 'sandbox-key',
      timeoutMs: 5000,
      cursorParam: 'after',
    });
    try {
      const { rows } = await exportAll(api);
      expect(rows).toHaveLength(30);
      expect(other.requestLog()[1]?.query).toHaveProperty('after');
    } finally {
      await api.close();
      await other.stop();
    }
  });
});

describe('searches', () => {
  it('pages through received alerts, which all carry the documented fields', async () => {
    const first = await client.searchReceived({ page: 1, pageSize: 5 });
    expect(first.page).toBe(1);
    expect(first.totalAlerts).toBeGreaterThan(5);
    expect(first.totalPages).toBe(Math.ceil(first.totalAlerts / 5));
    expect(first.alerts).toHaveLength(5);
    const second = await client.searchReceived({ page: 2, pageSize: 5 });
    expect(second.alerts.map((a) => a.id)).not.toEqual(first.alerts.map((a) => a.id));
    for (const alert of first.alerts) {
      expect(alert).toMatchObject({ iban: expect.any(String), isActive: expect.any(Boolean) });
    }
  });

  it('filters received alerts by qualification, IBAN and update range', async () => {
    const confirmed = await client.searchReceived({ qualification: 'CONFIRMED', pageSize: 500 });
    expect(confirmed.alerts.length).toBeGreaterThan(0);
    expect(confirmed.alerts.every((a) => a.qualification === 'CONFIRMED')).toBe(true);
    const one = confirmed.alerts[0]!;
    const byIban = await client.searchReceived({ iban: one.iban as string });
    expect(byIban.alerts.map((a) => a.id)).toContain(one.id);
    const at = one.updatedAt as string;
    const ranged = await client.searchReceived({ updatedFrom: at, updatedTo: at, pageSize: 500 });
    expect(ranged.alerts.every((a) => a.updatedAt === at)).toBe(true);
  });

  it('returns sent alerts split into myReports and otherReports and applies the bic filter', async () => {
    const sent = await client.searchSent({ pageSize: 50 });
    expect(sent.alerts.length).toBeGreaterThan(0);
    const alert = sent.alerts[0]!;
    expect(Array.isArray(alert.myReports)).toBe(true);
    expect(Array.isArray(alert.otherReports)).toBe(true);
    const byBic = await client.searchSent({ bic: alert.bic as string, pageSize: 500 });
    expect(byBic.alerts.every((a) => a.bic === alert.bic)).toBe(true);
  });

  it('never sends bic or author to the received search', async () => {
    sandbox.clearRequestLog();
    const filters = { pageSize: 2, bic: 'NOPE', author: 'x' };
    const page = await client.searchReceived(filters);
    expect(page.alerts.length).toBeGreaterThan(0);
  });

  it('turns a 400 into a typed client error that names the problem and is not retried', async () => {
    sandbox.clearRequestLog();
    const error = await client.searchSent({ pageSize: 100_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamClientError);
    expect(error).toMatchObject({ status: 400, method: 'POST', path: '/sharing/v1/alerts/sent/search' });
    expect((error as UpstreamClientError).bodyExcerpt).toContain('INVALID_FILTER');
    expect(sandbox.requestLog()).toHaveLength(1);
  });
});

describe('get one alert', () => {
  it('returns the full alert with its reports', async () => {
    const { alerts } = await client.searchReceived({ pageSize: 1 });
    const full = await client.getAlert(alerts[0]!.id);
    expect(full.id).toEqual(alerts[0]!.id);
    expect(Array.isArray(full.reports)).toBe(true);
  });

  it('rejects an unknown id with UpstreamNotFoundError', async () => {
    const error = await client.getAlert('no such alert/../x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamNotFoundError);
    expect((error as UpstreamNotFoundError).path).toBe('/sharing/v1/alerts/no%20such%20alert%2F..%2Fx');
  });
});

describe('verify', () => {
  const reachable = () => {
    const row = sandbox.currentRows().find((r) => /^(DE|AT|NL)/.test(String(r.iban)));
    if (!row) throw new Error('the seeded data has no reachable IBAN');
    return String(row.iban);
  };

  it('answers MTCH for the holder name and CMTC with the matched name for a near miss', async () => {
    const iban = reachable();
    const holder = sandbox.holderName(iban);
    expect(await client.verify({ iban, party: { name: holder } })).toEqual({ partyNameMatch: 'MTCH' });
    const near = holder.split(' ').reverse().join(' ');
    expect(await client.verify({ iban, party: { name: near } })).toEqual({
      partyNameMatch: 'CMTC',
      matchedName: holder,
    });
    expect(await client.verify({ iban, party: { name: 'Zzyzx Qwerty' } })).toEqual({
      partyNameMatch: 'NMTC',
    });
  });

  it('answers NOAP for an IBAN the scheme cannot reach', async () => {
    const result = await client.verify({ iban: 'GB82WEST12345698765432', party: { name: 'Jane Doe' } });
    expect(result.partyNameMatch).toBe('NOAP');
  });
});

describe('credentials', () => {
  it('rejects an unknown key with UpstreamUnauthorizedError after exactly one request', async () => {
    const intruder = createApiClient({ baseUrl: sandbox.url, apiKey: 'stolen-key', timeoutMs: 5000 });
    sandbox.clearRequestLog();
    try {
      const error = await intruder.exportPage({}).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamUnauthorizedError);
      expect(error).toMatchObject({ code: ErrorCodes.UPSTREAM_UNAUTHORIZED, status: 401, retriable: false });
      expect(String((error as Error).message)).not.toContain('stolen-key');
      expect(sandbox.requestLog()).toHaveLength(1);
    } finally {
      await intruder.close();
    }
  });

  it('keeps tenants apart: each key sees the alerts it holds', async () => {
    const b = createApiClient({ baseUrl: sandbox.url, apiKey: 'tenant-b-key', timeoutMs: 5000 });
    try {
      const mine = await client.searchReceived({ pageSize: 500 });
      const theirs = await b.searchReceived({ pageSize: 500 });
      const overlap = mine.alerts.filter((a) => theirs.alerts.some((t) => t.id === a.id));
      expect(overlap).toEqual([]);
    } finally {
      await b.close();
    }
  });
});
