import { beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { call, startSandbox } from './helpers.ts';

type Report = { id: string; author: string; markedForDeletion: boolean };
type Alert = Record<string, unknown> & { id: string | number; iban: string; bic: string; updatedAt: string };
type SentAlert = Alert & { myReports: Report[]; otherReports: Report[] };
type Page<A> = { page: number; totalPages: number; totalAlerts: number; alerts: A[] };

const A = 'tenant-a';
const B = 'tenant-b';
let sandbox: Sandbox;

async function searchOf<A>(kind: 'sent' | 'received', key: string, body: unknown): Promise<Page<A>> {
  const answer = await call(sandbox.url, `/sharing/v1/alerts/${kind}/search`, { key, body });
  expect(answer.status).toBe(200);
  return answer.body as Page<A>;
}

beforeAll(async () => {
  sandbox = await startSandbox({ apiKeys: [A, B], alerts: 400, seed: 3 });
});

describe('received search', () => {
  it('returns the alerts on accounts the caller holds, pages them and counts them', async () => {
    const all = await searchOf<Alert>('received', A, { pageSize: 500 });
    expect(all.totalAlerts).toBe(all.alerts.length);
    expect(all.totalAlerts).toBeGreaterThan(40);
    const holders = await Promise.all(
      all.alerts.slice(0, 10).map(async (a) => {
        const full = await call(sandbox.url, `/sharing/v1/alerts/${encodeURIComponent(String(a.id))}`, {
          key: A,
        });
        return (full.body as { holder: { institution: string } }).holder.institution;
      }),
    );
    expect(new Set(holders)).toEqual(new Set(['PSP001']));
    const second = await searchOf<Alert>('received', A, { page: 2, pageSize: 7 });
    expect(second).toMatchObject({ page: 2, totalPages: Math.ceil(all.totalAlerts / 7) });
    expect(second.alerts.map((a) => a.id)).toEqual(all.alerts.slice(7, 14).map((a) => a.id));
  });

  it('keeps tenants apart: no alert is received by two tenants', async () => {
    const mine = await searchOf<Alert>('received', A, { pageSize: 500 });
    const theirs = await searchOf<Alert>('received', B, { pageSize: 500 });
    const overlap = mine.alerts.filter((a) => theirs.alerts.some((t) => t.id === a.id));
    expect(theirs.totalAlerts).toBeGreaterThan(0);
    expect(overlap).toEqual([]);
  });

  it('filters by qualification, IBAN (spaces and case ignored) and an inclusive update range', async () => {
    const confirmed = await searchOf<Alert>('received', A, { qualification: 'CONFIRMED', pageSize: 500 });
    expect(confirmed.alerts.length).toBeGreaterThan(0);
    expect(confirmed.alerts.every((a) => a.qualification === 'CONFIRMED')).toBe(true);
    const one = confirmed.alerts[0] as Alert;
    const spaced = one.iban.toLowerCase().replace(/(.{4})/g, '$1 ');
    const byIban = await searchOf<Alert>('received', A, { iban: spaced });
    expect(byIban.alerts.map((a) => a.id)).toEqual([one.id]);
    const ranged = await searchOf<Alert>('received', A, {
      updatedFrom: one.updatedAt,
      updatedTo: one.updatedAt,
    });
    expect(ranged.alerts.map((a) => a.id)).toContain(one.id);
    expect(ranged.alerts.every((a) => a.updatedAt === one.updatedAt)).toBe(true);
  });

  it('answers the newest updates first', async () => {
    const page = await searchOf<Alert>('received', A, { pageSize: 100 });
    const times = page.alerts.map((a) => Date.parse(a.updatedAt));
    expect(times.every((t, k) => k === 0 || t <= (times[k - 1] as number))).toBe(true);
  });
});

describe('sent search', () => {
  it('returns alerts with a report by the caller, split into myReports and otherReports', async () => {
    const sent = await searchOf<SentAlert>('sent', A, { pageSize: 500 });
    expect(sent.alerts.length).toBeGreaterThan(20);
    for (const alert of sent.alerts) {
      expect(alert.myReports.length).toBeGreaterThan(0);
      expect(alert.myReports.every((r) => r.author === 'PSP001')).toBe(true);
      expect(alert.otherReports.every((r) => r.author !== 'PSP001')).toBe(true);
      expect(alert.myReports.length + alert.otherReports.length).toBe(alert.reportsCount);
    }
    expect(sent.alerts.some((a) => a.otherReports.length > 0)).toBe(true);
  });

  it('filters by bic and by author institution', async () => {
    const sent = await searchOf<SentAlert>('sent', A, { pageSize: 500 });
    const bic = (sent.alerts[0] as SentAlert).bic;
    const byBic = await searchOf<SentAlert>('sent', A, { bic, pageSize: 500 });
    expect(byBic.alerts.length).toBeGreaterThan(0);
    expect(byBic.alerts.every((a) => a.bic === bic)).toBe(true);
    const byAuthor = await searchOf<SentAlert>('sent', A, { author: 'EXT001', pageSize: 500 });
    expect(byAuthor.alerts.length).toBeGreaterThan(0);
    expect(byAuthor.alerts.length).toBeLessThan(sent.alerts.length);
    for (const a of byAuthor.alerts) expect(a.otherReports.some((r) => r.author === 'EXT001')).toBe(true);
  });
});

describe('bad search bodies', () => {
  const cases: [string, 'sent' | 'received', unknown][] = [
    ['an unknown filter', 'received', { from: '2026-01-01T00:00:00Z' }],
    ['bic on the received search', 'received', { bic: 'ABCDDE2XXXX' }],
    ['an unknown qualification', 'sent', { qualification: 'MAYBE' }],
    ['a date that is not an instant', 'sent', { updatedFrom: 'last week' }],
    [
      'a date that does not exist (February 30, not 2 March)',
      'received',
      { updatedTo: '2026-02-30T00:00:00Z' },
    ],
    ['a page size beyond 500', 'sent', { pageSize: 501 }],
    ['a page of 0', 'received', { page: 0 }],
    ['an IBAN that is not a string', 'received', { iban: 42 }],
    ['an array body', 'received', []],
  ];
  for (const [what, kind, body] of cases) {
    it(`answers 400 INVALID_FILTER for ${what}`, async () => {
      const answer = await call(sandbox.url, `/sharing/v1/alerts/${kind}/search`, { key: A, body });
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ code: 'INVALID_FILTER', message: expect.any(String) });
    });
  }

  it('answers 400 INVALID_BODY for a body that is not JSON', async () => {
    const answer = await call(sandbox.url, '/sharing/v1/alerts/sent/search', { key: A, raw: '{"page":' });
    expect(answer).toMatchObject({ status: 400, body: { code: 'INVALID_BODY' } });
  });
});

describe('one alert', () => {
  it('returns the full alert: reports with deletion marks, holder notes, observations and comments', async () => {
    const ids = sandbox.currentRows().map((r) => r.id);
    const numeric = ids.find((id) => typeof id === 'number');
    for (const id of [ids[0], numeric]) {
      const answer = await call(sandbox.url, `/sharing/v1/alerts/${id}`, { key: B });
      expect(answer.status).toBe(200);
      const full = answer.body as Record<string, unknown> & { reports: Report[] };
      expect(full.id).toEqual(id);
      expect(full).toMatchObject({
        sightingsCount: expect.any(Number),
        falsePositivesCount: expect.any(Number),
        qualificationNotes: expect.any(Array),
        participantObservations: expect.any(Array),
        comments: expect.any(Array),
      });
      expect(full.reports).toHaveLength(full.reportsCount as number);
      expect(full.reports.every((r) => typeof r.markedForDeletion === 'boolean')).toBe(true);
    }
  });

  it('answers 404 with a JSON error for an unknown id', async () => {
    for (const id of ['ALR-99999999', '12', 'no%20such']) {
      const answer = await call(sandbox.url, `/sharing/v1/alerts/${id}`, { key: A });
      expect(answer).toMatchObject({
        status: 404,
        body: { code: 'ALERT_NOT_FOUND', message: expect.any(String) },
      });
    }
  });

  it('answers an alert under its own id only: another spelling of it is 404 ALERT_NOT_FOUND', async () => {
    const ids = sandbox.currentRows().map((r) => r.id);
    const numeric = ids.find((id) => typeof id === 'number') as number;
    const aliases = [
      'ALR-000000001',
      'ALR-0000000001',
      'alr-00000001',
      'ALR-1',
      `0${numeric}`,
      `ALR-${String(numeric - 100_000 + 1).padStart(8, '0')}`,
      `ALR-0${String(numeric - 100_000 + 1).padStart(8, '0')}`,
    ];
    for (const id of aliases) {
      const answer = await call(sandbox.url, `/sharing/v1/alerts/${id}`, { key: A });
      expect({ id, ...answer }).toMatchObject({ status: 404, body: { code: 'ALERT_NOT_FOUND' } });
    }
    // Percent-encoding an unreserved character spells the same path (RFC 3986 §6.2.2.2), not another id.
    const encoded = await call(sandbox.url, '/sharing/v1/alerts/%41LR-0000000%31', { key: A });
    expect(encoded).toMatchObject({ status: 200, body: { id: 'ALR-00000001' } });
  });

  it('answers 404 ALERT_NOT_FOUND, not 500, for an id that is not valid percent-encoding', async () => {
    for (const id of ['%E0%A4%A', '%', 'ALR-%ZZ']) {
      const answer = await call(sandbox.url, `/sharing/v1/alerts/${id}`, { key: A });
      expect(answer).toMatchObject({
        status: 404,
        body: { code: 'ALERT_NOT_FOUND', message: expect.any(String) },
      });
    }
  });
});
