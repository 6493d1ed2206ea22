import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { loadReplayConfig } from '../../src/config/index.ts';
import { replayAlerts } from '../../src/replay/index.ts';
import { runCli } from '../helpers/cli.ts';
import { stackEnv } from '../helpers/stack.ts';
import { alertFor, alertsTopic, ibans, storeDir, type TestEvent, tableEnv } from './harness.ts';

const metricOf = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);

async function metrics(url: string): Promise<string> {
  const response = await request(`${url}/metrics`);
  return response.body.text();
}

/** Every alert the service answers, IBAN → event id, through the paging API. */
async function served(url: string): Promise<Map<string, string>> {
  const rows = new Map<string, string>();
  let cursor: string | null = null;
  do {
    const response = await request(`${url}/v1/alerts?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
    const body = (await response.body.json()) as {
      alerts: { iban: string; eventId: string }[];
      nextCursor: string | null;
    };
    for (const a of body.alerts) rows.set(a.iban, a.eventId);
    cursor = body.nextCursor;
  } while (cursor);
  return rows;
}

/** A topic of `rounds` upserts of each of `count` IBANs, the first `deactivated` of them deactivated after. */
async function backlog(count: number, seed: number, rounds: number, deactivated = 0) {
  const { topic, publish } = await alertsTopic(3);
  const keys = ibans(count, seed);
  const events: TestEvent[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const iban of keys) events.push({ type: 'upsert', alert: alertFor(iban, round) });
  }
  for (const iban of keys.slice(0, deactivated)) events.push({ type: 'deactivate', iban, n: rounds });
  await publish(events);
  const env = tableEnv(topic, join(await storeDir(), 'table.db'), { LOG_LEVEL: 'info' });
  return { topic, env, total: events.length };
}

/** Starts the table and waits until its metrics satisfy `reached`; gives its events applied then. */
async function startUntil(env: Record<string, string>, reached: (metricsText: string) => void) {
  const table = runCli(['table'], env);
  const url = String((await table.logLine((l) => l.msg === 'alert table service started')).url);
  let applied = 0;
  await vi.waitFor(
    async () => {
      const text = await metrics(url);
      applied = metricOf(text, 'fraudlink_table_events_applied_total');
      reached(text);
    },
    { timeout: 60_000, interval: 5 },
  );
  return { table, applied };
}

/**
 * Starts the table again on its store and waits until it has caught up: it read only the records
 * after its stored offsets (the topic holds no markers) and serves replay's table. Gives the stored
 * offsets' sum and the number of alerts.
 */
async function restartAndCompare(env: Record<string, string>, topic: string, total: number) {
  const table = runCli(['table'], env);
  const [restarted, resumed, caughtUp] = [
    table.logLine((l) => l.msg === 'alert table service started'),
    table.logLine((l) => l.msg === 'reading the alerts topic from the stored offsets'),
    table.logLine((l) => l.msg === 'the alert table has caught up with the topic'),
  ];
  const startOffsets = Object.values((await resumed).startOffsets as Record<string, string>).map(Number);
  const stored = startOffsets.reduce((sum, n) => sum + n, 0);
  const url = String((await restarted).url);
  await caughtUp;
  expect(metricOf(await metrics(url), 'fraudlink_table_records_read_total')).toBe(total - stored);

  const config = loadReplayConfig({ ...stackEnv(), ALERTS_TOPIC: topic });
  const replay = await replayAlerts({ kafka: config.kafka, registry: config.registry, alertsTopic: topic });
  const expected = new Map([...replay.alerts].map(([iban, a]) => [iban, a.eventId]));
  expect(await served(url)).toEqual(expected);
  table.child.kill('SIGTERM');
  expect(await table.exited).toBe(0);
  return { stored, alerts: expected.size };
}

describe('the alert table service stopped while catching up', () => {
  it('resumes from its stored offsets with the same table, reading only the records after them', async () => {
    // More IBANs than the table holds before writing them (100,000): it commits before catching up.
    const { topic, env, total } = await backlog(120_000, 21, 2, 2000);

    // Killed once a first transaction is committed (rows show), while the backlog is still applied.
    const first = await startUntil(env, (text) =>
      expect(metricOf(text, 'fraudlink_table_rows')).toBeGreaterThan(0),
    );
    first.table.child.kill('SIGKILL');
    expect(await first.table.exited).toBe('SIGKILL');
    expect(first.applied).toBeLessThan(total);

    const { stored, alerts } = await restartAndCompare(env, topic, total);
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(total);
    expect(alerts).toBe(118_000);
  });

  it('keeps what it read when stopped with SIGTERM while catching up, and reads on from there', async () => {
    // Fewer IBANs than one hold (100,000): nothing is committed before the stop.
    const { topic, env, total } = await backlog(60_000, 22, 3);

    const first = await startUntil(env, (text) =>
      expect(metricOf(text, 'fraudlink_table_events_applied_total')).toBeGreaterThan(0),
    );
    first.table.child.kill('SIGTERM');
    expect(await first.table.exited).toBe(0);
    // Stopped while catching up, not after.
    expect(first.applied).toBeLessThan(total);

    const { stored } = await restartAndCompare(env, topic, total);
    expect(stored).toBeGreaterThanOrEqual(first.applied);
  });
});
