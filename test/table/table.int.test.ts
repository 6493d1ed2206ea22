import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { loadReplayConfig } from '../../src/config/index.ts';
import { replayAlerts } from '../../src/replay/index.ts';
import { connectorHarness } from '../connector/harness.ts';
import { logCapture } from '../helpers/log.ts';
import { stackEnv } from '../helpers/stack.ts';
import { alertFor, alertsTopic, allRows, ibans, openTestTable, storeDir, type TestEvent } from './harness.ts';

async function replayed(topic: string) {
  const config = loadReplayConfig({ ...stackEnv(), ALERTS_TOPIC: topic });
  const result = await replayAlerts(
    { kafka: config.kafka, registry: config.registry, alertsTopic: topic },
    { skipUndecodable: true },
  );
  return result.alerts;
}

/** The value of a counter or gauge of `registry`. */
async function metric(registry: Registry, name: string): Promise<number> {
  const json = await registry.getMetricsAsJSON();
  return json.find((m) => m.name === name)?.values.reduce((sum, v) => sum + v.value, 0) ?? Number.NaN;
}

describe('the alert table', () => {
  it('holds what replay computes (upserts, deactivations, tombstones, an undecodable record skipped) and follows new events', async () => {
    const { topic, publish, publishRaw } = await alertsTopic(3);
    const all = ibans(301);
    const [fresh = ''] = all.splice(300);
    const events: TestEvent[] = [
      ...all.map((iban) => ({ type: 'upsert' as const, alert: alertFor(iban, 1) })),
      ...all.slice(0, 100).map((iban) => ({ type: 'upsert' as const, alert: alertFor(iban, 2, 'PENDING') })),
      ...all.slice(0, 50).map((iban) => ({ type: 'deactivate' as const, iban, n: 3 })),
      ...all.slice(50, 70).map((iban) => ({ type: 'tombstone' as const, iban })),
    ];
    await publish(events);
    await publishRaw([{ key: all[299] ?? '', value: Buffer.from('not avro') }]);
    const metrics = new Registry();
    const table = await openTestTable(topic, join(await storeDir(), 'table.db'), { metrics });
    await table.caughtUp();

    const rows = allRows(table);
    expect(rows).toEqual(await replayed(topic));
    expect(rows.size).toBe(230);
    expect(table.status()).toMatchObject({ ready: true, rows: 230 });
    expect(await metric(metrics, 'fraudlink_table_records_skipped_total')).toBe(1);
    expect(await metric(metrics, 'fraudlink_table_events_applied_total')).toBe(events.length);
    await vi.waitFor(() => expect(table.status().offsetLag).toBe(0), { timeout: 10_000 });

    // Any common spelling of an IBAN finds its alert; a deactivated or removed one has none.
    const [deactivated = '', removed = '', upserted = '', kept = ''] = [all[0], all[60], all[80], all[200]];
    const spaced = kept.toLowerCase().replace(/(.{4})/g, '$1 ');
    expect(table.get(spaced)).toEqual(alertFor(kept, 1));
    expect(table.get(upserted)).toEqual(alertFor(upserted, 2, 'PENDING'));
    expect(table.get(deactivated)).toBeNull();
    expect(table.get(removed)).toBeNull();
    expect(table.get('not an iban')).toBeNull();
    expect(table.lookup([kept, deactivated, 'DE00 1234', spaced, fresh])).toEqual([
      { iban: kept, alert: alertFor(kept, 1) },
      { iban: deactivated, alert: null },
      { iban: 'DE00 1234', alert: null, invalid: true },
      { iban: spaced, alert: alertFor(kept, 1) },
      { iban: fresh, alert: null },
    ]);

    // Followed live: a new alert appears, a deactivation removes one.
    await publish([
      { type: 'upsert', alert: alertFor(fresh, 4) },
      { type: 'deactivate', iban: kept, n: 4 },
    ]);
    await vi.waitFor(
      () => {
        expect(table.get(fresh)).toEqual(alertFor(fresh, 4));
        expect(table.get(kept)).toBeNull();
      },
      { timeout: 20_000 },
    );
  });

  it('pages through the table in IBAN order, filtered, complete and without duplicates', async () => {
    const { topic, publish } = await alertsTopic(3);
    const all = ibans(250, 7);
    await publish(
      all.map((iban, n) => ({
        type: 'upsert',
        alert: alertFor(iban, n, n % 3 === 0 ? 'PENDING' : 'CONFIRMED'),
      })),
    );
    const table = await openTestTable(topic, join(await storeDir(), 'table.db'));
    await table.caughtUp();
    const pageThrough = (query: { qualification?: string; updatedAfter?: number }) => {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = table.list({ ...query, limit: 7, ...(cursor && { cursor }) });
        expect(page.alerts.length).toBeLessThanOrEqual(7);
        seen.push(...page.alerts.map((a) => a.iban));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return seen;
    };
    expect(pageThrough({})).toEqual([...all].sort());
    const pending = all.filter((_, n) => n % 3 === 0).sort();
    expect(pageThrough({ qualification: 'PENDING' })).toEqual(pending);
    const late = all.filter((_, n) => n > 200).sort();
    expect(pageThrough({ updatedAfter: 1_750_000_000_000 + 200 })).toEqual(late);
    expect(() => table.list({ cursor: 'bm90IGEgY3Vyc29y' })).toThrow(/cursor/);
  });

  it('rebuilds a store of another topic, and one of another cluster, from the start of its topic', async () => {
    const first = await alertsTopic(1);
    const second = await alertsTopic(2);
    const [a = '', b = '', c = ''] = ibans(3, 11);
    await first.publish([{ type: 'upsert', alert: alertFor(a, 1) }]);
    await second.publish([
      { type: 'upsert', alert: alertFor(b, 1) },
      { type: 'upsert', alert: alertFor(c, 1) },
    ]);
    const dbPath = join(await storeDir(), 'table.db');
    const firstTable = await openTestTable(first.topic, dbPath);
    await firstTable.caughtUp();
    expect([...allRows(firstTable).keys()]).toEqual([a]);
    await firstTable.close();

    const log = logCapture();
    const logger = pino({ level: 'info' }, log.stream);
    const secondTable = await openTestTable(second.topic, dbPath, { logger });
    await secondTable.caughtUp();
    expect([...allRows(secondTable).keys()].sort()).toEqual([b, c].sort());
    expect(
      log.lines.find((l) => l.msg === 'rebuilding the alert table from the start of the topic'),
    ).toMatchObject({ why: `the store holds topic ${first.topic}` });
    await secondTable.close();

    // The same topic name on another cluster: a row the store alone holds must go.
    const db = new DatabaseSync(dbPath);
    db.prepare("UPDATE meta SET value = 'another-cluster' WHERE key = 'clusterId'").run();
    db.prepare(
      "INSERT INTO alerts SELECT 'XX00FOREIGN', event_id, alert_id, bic, qualification, qualification_raw, reports_count, updated_at, observed_at FROM alerts LIMIT 1",
    ).run();
    db.close();
    const rebuilt = await openTestTable(second.topic, dbPath, { logger });
    await rebuilt.caughtUp();
    expect([...allRows(rebuilt).keys()].sort()).toEqual([b, c].sort());
    expect(log.lines.map((l) => l.why)).toContain('the store holds cluster another-cluster');
  });

  it('equals replay on a topic the connector wrote from the sandbox, deactivations included', async () => {
    const h = await connectorHarness({ alerts: 150 });
    const connector = h.start();
    h.sandbox.applyChanges(60);
    await h.converged();
    connector.child.kill('SIGTERM');
    expect(await connector.exited).toBe(0);
    const topic = h.env.ALERTS_TOPIC;
    const table = await openTestTable(topic, join(await storeDir(), 'table.db'));
    await table.caughtUp();
    const rows = allRows(table);
    const replay = await replayed(topic);
    expect(rows).toEqual(replay);
    const active = h.sandbox.currentRows().filter((r) => (r as { isActive?: boolean }).isActive);
    expect(rows.size).toBe(active.length);
    expect(active.length).toBeLessThan(h.sandbox.currentRows().length);
  });
});
