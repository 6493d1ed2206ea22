import { isValidIBAN } from 'ibantools';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSandbox, MALFORMED_KINDS } from '../../src/sandbox/index.ts';
import { call, epochOf, exportPage, exportPath, type Row, startSandbox, versionOf, walk } from './helpers.ts';

const FIELDS = ['bic', 'iban', 'id', 'isActive', 'qualification', 'reportsCount', 'updatedAt'];

describe('export feed', () => {
  it('walks with the cursor to a null nextCursor and serves every alert exactly once', async () => {
    const sandbox = await startSandbox({ alerts: 230, pageSize: 25 });
    const { rows, pages } = await walk(sandbox);
    expect(pages).toBe(10);
    const ids = rows.map((r) => String(r.id));
    expect(new Set(ids).size).toBe(230);
    expect(ids.sort()).toEqual(
      sandbox
        .currentRows()
        .map((r) => String(r.id))
        .sort(),
    );
  });

  it('serves rows with exactly the seven fields, in non-decreasing updatedAt order', async () => {
    const sandbox = await startSandbox({ alerts: 300, pageSize: 1000 });
    const { rows } = await walk(sandbox);
    for (const row of rows) expect(Object.keys(row).sort()).toEqual(FIELDS);
    const times = rows.map((r) => epochOf(r.updatedAt));
    expect(times.every((t, k) => k === 0 || t >= (times[k - 1] as number))).toBe(true);
    expect(rows.every((r) => isValidIBAN(String(r.iban)))).toBe(true);
  });

  it('serves ids as strings and as numbers, updatedAt as ISO-8601 with milliseconds and as epoch ms', async () => {
    const sandbox = await startSandbox({ alerts: 100 });
    const { rows } = await walk(sandbox);
    expect(rows.some((r) => typeof r.id === 'number')).toBe(true);
    expect(rows.filter((r) => typeof r.id === 'string').length).toBeGreaterThan(rows.length / 2);
    expect(rows.some((r) => typeof r.updatedAt === 'number')).toBe(true);
    const iso = rows.filter((r) => typeof r.updatedAt === 'string').map((r) => r.updatedAt as string);
    expect(iso.length).toBeGreaterThan(rows.length / 2);
    for (const at of iso) expect(at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('answers nextCursor null on the page that reaches the end, even when the page is full', async () => {
    const sandbox = await startSandbox({ alerts: 10, pageSize: 10 });
    const page = await exportPage(sandbox, 'sandbox-key');
    expect(page.rows).toHaveLength(10);
    expect(page.nextCursor).toBeNull();
  });

  it('resumes after updatedAfter, which is exclusive', async () => {
    const sandbox = await startSandbox({ alerts: 200, pageSize: 30 });
    const all = (await walk(sandbox)).rows;
    const mark = epochOf(all[120]?.updatedAt);
    const { rows } = await walk(sandbox, 'sandbox-key', { updatedAfter: new Date(mark).toISOString() });
    expect(rows.map(versionOf)).toEqual(all.filter((r) => epochOf(r.updatedAt) > mark).map(versionOf));
  });

  it('serves every row of a millisecond that several rows share, to a walk and to updatedAfter = that ms - 1', async () => {
    const sandbox = await startSandbox({ alerts: 500, pageSize: 7 });
    const all = (await walk(sandbox)).rows;
    const counts = new Map<number, number>();
    for (const r of all) counts.set(epochOf(r.updatedAt), (counts.get(epochOf(r.updatedAt)) ?? 0) + 1);
    const [ms, size] = [...counts].sort((a, b) => b[1] - a[1])[0] as [number, number];
    expect(size).toBeGreaterThan(2);
    const { rows } = await walk(sandbox, 'sandbox-key', { updatedAfter: new Date(ms - 1).toISOString() });
    expect(rows.filter((r) => epochOf(r.updatedAt) === ms)).toHaveLength(size);
  });

  it('gives changes applied together one shared millisecond at the end of the feed', async () => {
    const sandbox = await startSandbox({ alerts: 50 });
    const before = (await walk(sandbox)).rows;
    const last = epochOf(before.at(-1)?.updatedAt);
    sandbox.applyChanges(12);
    const { rows } = await walk(sandbox, 'sandbox-key', { updatedAfter: new Date(last).toISOString() });
    expect(rows.length).toBeGreaterThan(1);
    expect(new Set(rows.map((r) => epochOf(r.updatedAt))).size).toBe(1);
  });

  it('shows a change made during a walk later in the same walk, and every final state exactly once', async () => {
    const sandbox = await startSandbox({ alerts: 400, pageSize: 20 });
    const served = new Map<string, number>();
    const { rows } = await walk(sandbox, 'sandbox-key', {}, (page) => {
      if (page % 3 === 0) sandbox.applyChanges(15);
    });
    for (const r of rows) served.set(versionOf(r), (served.get(versionOf(r)) ?? 0) + 1);
    expect([...served.values()].every((n) => n === 1)).toBe(true);
    const finals = sandbox.currentRows();
    expect(finals.length).toBeGreaterThan(400);
    for (const row of finals) expect(served.has(versionOf(row as Row))).toBe(true);
    // An alert seen twice was changed after it was served: its later version comes later.
    const lastSeen = new Map<string, number>();
    rows.forEach((r, k) => {
      lastSeen.set(String(r.id), k);
    });
    expect(rows.filter((r, k) => lastSeen.get(String(r.id)) !== k).length).toBeGreaterThan(0);
  });

  it('serves deactivations as rows with isActive false, and reactivations', async () => {
    const sandbox = await startSandbox({ alerts: 100 });
    const before = new Map(sandbox.currentRows().map((r) => [String(r.id), r.isActive]));
    const last = Math.max(...sandbox.currentRows().map((r) => epochOf(r.updatedAt)));
    sandbox.applyChanges(150);
    const { rows } = await walk(sandbox, 'sandbox-key', { updatedAfter: new Date(last).toISOString() });
    const flips = rows.filter((r) => before.has(String(r.id)) && before.get(String(r.id)) !== r.isActive);
    expect(flips.some((r) => r.isActive === false)).toBe(true);
    expect(flips.some((r) => r.isActive === true)).toBe(true);
  });

  it('puts a malformed row after each change when the fault is on, cycling through the DLQ rules', async () => {
    const sandbox = await startSandbox({ alerts: 20 });
    const last = Math.max(...sandbox.currentRows().map((r) => epochOf(r.updatedAt)));
    sandbox.setFaults({ malformedRowRate: 1 });
    sandbox.applyChanges(6);
    sandbox.setFaults({ malformedRowRate: 0 });
    const { rows } = await walk(sandbox, 'sandbox-key', { updatedAfter: new Date(last).toISOString() });
    const bad = rows.filter((r) => !('id' in r) || String(r.id).startsWith('BAD-'));
    expect(rows).toHaveLength(12);
    expect(bad).toHaveLength(6);
    const broken = bad.map((r) => {
      if (!('id' in r)) return 'missing-id';
      if (!('iban' in r)) return 'missing-iban';
      if (!isValidIBAN(String(r.iban))) return 'invalid-iban';
      if (r.updatedAt === 'yesterday') return 'bad-updated-at';
      if (typeof r.isActive !== 'boolean') return 'bad-is-active';
      const n = r.reportsCount as number;
      return Number.isInteger(n) && n >= 0 && n < 2 ** 31 ? 'valid' : 'bad-reports-count';
    });
    expect(broken.sort()).toEqual(
      [
        'bad-is-active',
        'bad-reports-count',
        'bad-updated-at',
        'invalid-iban',
        'missing-iban',
        'missing-id',
      ].sort(),
    );
    // Each malformed row sits right after the change that emitted it.
    rows.forEach((r, k) => {
      expect(bad.includes(r)).toBe(k % 2 === 1);
    });
  });

  it('gives bad-reports-count rows -1, 3.5 and 2^31 in turn while cycling through the kinds', async () => {
    const sandbox = await startSandbox({ alerts: 20 });
    const badCounts = async () =>
      (await walk(sandbox)).rows
        .map((r) => r.reportsCount as number)
        .filter((n) => !Number.isInteger(n) || n < 0 || n >= 2 ** 31);
    // Three rounds of every kind from the malformed-rate fault, then three from the admin call.
    sandbox.setFaults({ malformedRowRate: 1 });
    sandbox.applyChanges(3 * MALFORMED_KINDS.length);
    sandbox.setFaults({ malformedRowRate: 0 });
    expect(await badCounts()).toEqual([-1, 3.5, 2 ** 31]);
    for (let k = 0; k < 3 * MALFORMED_KINDS.length; k++) sandbox.injectMalformedRow();
    expect(await badCounts()).toEqual([-1, 3.5, 2 ** 31, -1, 3.5, 2 ** 31]);
  });

  it('serves malformed rows injected on demand, each with its own feed entry', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    expect(sandbox.injectMalformedRow('bad-is-active')).toBe('bad-is-active');
    const { rows } = await walk(sandbox);
    expect(rows).toHaveLength(6);
    expect(rows.at(-1)).toMatchObject({ isActive: 'yes', qualification: 'PENDING' });
    expect(sandbox.currentRows()).toHaveLength(5);
  });

  it('reads the cursor under the configured parameter name', async () => {
    const sandbox = await startSandbox({ alerts: 30, pageSize: 10, cursorParam: 'after' });
    const first = (await call(sandbox.url, exportPath({}), { key: 'sandbox-key' })).body as {
      nextCursor: string;
    };
    const second = await call(sandbox.url, exportPath({ cursor: first.nextCursor }, 'after'), {
      key: 'sandbox-key',
    });
    expect(second.status).toBe(200);
    expect((second.body as { rows: Row[] }).rows[0]).not.toEqual(
      (first as unknown as { rows: Row[] }).rows[0],
    );
  });

  it('answers 400 INVALID_UPDATED_AFTER for February 30 instead of reading it as 2 March', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const answer = await call(sandbox.url, exportPath({ updatedAfter: '2026-02-30T00:00:00Z' }), {
      key: 'sandbox-key',
    });
    expect(answer).toEqual(
      expect.objectContaining({
        status: 400,
        body: { code: 'INVALID_UPDATED_AFTER', message: expect.any(String) },
      }),
    );
  });

  it('refuses with 400 INVALID_CURSOR a cursor it never issued: forged, edited, respelled or from another seed', async () => {
    const sandbox = await startSandbox({ alerts: 30, pageSize: 10 });
    const issued = (await exportPage(sandbox, 'sandbox-key')).nextCursor as string;
    expect(issued).toMatch(/^[\w-]+$/);
    const other = await startSandbox({ alerts: 30, pageSize: 10, seed: 2 });
    const foreign = (await exportPage(other, 'sandbox-key')).nextCursor as string;
    const flipped = `${issued.slice(0, -1)}${issued.endsWith('A') ? 'B' : 'A'}`;
    const text = Buffer.from(issued, 'base64url').toString('latin1');
    for (const cursor of [
      Buffer.from('v1.5').toString('base64url'),
      Buffer.from(text.replace(/\.\d+\./, '.5.')).toString('base64url'),
      Buffer.from(text.replace('.', '.0')).toString('base64url'),
      flipped,
      `${issued}=`,
      foreign,
    ]) {
      const answer = await call(sandbox.url, exportPath({ cursor }), { key: 'sandbox-key' });
      expect({ cursor, ...answer }).toEqual(
        expect.objectContaining({
          status: 400,
          body: { code: 'INVALID_CURSOR', message: expect.any(String) },
        }),
      );
    }
  });

  it("honours a cursor issued to one tenant when another passes it: one feed for every tenant, the caller's rate limit", async () => {
    const frozen = Date.parse('2026-11-22T09:30:00.000Z');
    const keys = ['tenant-a', 'tenant-b'];
    const sandbox = await startSandbox({
      alerts: 30,
      pageSize: 10,
      apiKeys: keys,
      rateLimit: 1,
      now: () => frozen,
    });
    const cursor = (await exportPage(sandbox, 'tenant-a')).nextCursor as string;
    const asB = await exportPage(sandbox, 'tenant-b', { cursor });
    expect(asB.rows.map((r) => r.id)).toEqual(
      sandbox
        .currentRows()
        .slice(10, 20)
        .map((r) => r.id),
    );
    // The limit counts the caller's key: b was served though a had spent its one request a
    // second, and the cursor moves no quota between them; each has now spent its own.
    expect((await call(sandbox.url, exportPath({ cursor }), { key: 'tenant-a' })).status).toBe(429);
    expect((await call(sandbox.url, exportPath({ cursor }), { key: 'tenant-b' })).status).toBe(429);
  });

  it('honours its cursors after a restart of the same sandbox, and another sandbox of the same seed refuses them', async () => {
    const options = { port: 0, alerts: 30, pageSize: 10, changesPerSec: 0, rateLimit: 0, seed: 7 };
    const first = createSandbox(options);
    onTestFinished(() => first.stop());
    await first.start();
    const cursor = (await exportPage(first, 'sandbox-key')).nextCursor as string;
    const next = (await exportPage(first, 'sandbox-key', { cursor })).rows.map((r) => r.id);
    await first.stop();
    await first.start();
    expect((await exportPage(first, 'sandbox-key', { cursor })).rows.map((r) => r.id)).toEqual(next);
    await first.stop();
    // Another feed, though seeded alike: past its backlog it may differ (other --alerts, other
    // changes), and a cursor of the first would skip its rows unannounced.
    const reseeded = await startSandbox({ ...options, alerts: 40 });
    expect(await call(reseeded.url, exportPath({ cursor }), { key: 'sandbox-key' })).toMatchObject({
      status: 400,
      body: { code: 'INVALID_CURSOR' },
    });
  });

  it('answers 400 INVALID_UPDATED_AFTER for updatedAfter in epoch ms, which the contract gives as ISO-8601', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const mark = epochOf(sandbox.currentRows()[2]?.updatedAt);
    for (const updatedAfter of [String(mark), '0']) {
      const answer = await call(sandbox.url, exportPath({ updatedAfter }), { key: 'sandbox-key' });
      expect({ updatedAfter, ...answer }).toMatchObject({
        status: 400,
        body: { code: 'INVALID_UPDATED_AFTER', message: expect.stringContaining('ISO-8601') },
      });
    }
  });

  it('answers 400 with a JSON error for a cursor it never issued and for an updatedAfter that is not an instant', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    for (const from of [
      { cursor: 'bm9wZQ' },
      { updatedAfter: 'yesterday' },
      { updatedAfter: '2026-11-22' },
      { updatedAfter: '2026-11-22T24:00:00Z' },
    ]) {
      const answer = await call(sandbox.url, exportPath(from), { key: 'sandbox-key' });
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ code: expect.any(String), message: expect.any(String) });
    }
  });
});
