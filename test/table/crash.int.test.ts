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

describe('the alert table service after kill -9', () => {
  it('resumes from its stored offsets with the same table, reading only the records after them', async () => {
    const { topic, publish } = await alertsTopic(3);
    // More IBANs than the table holds before writing them (100,000): it commits before catching up.
    const keys = ibans(120_000, 21);
    const events: TestEvent[] = [];
    for (let round = 1; round <= 2; round++) {
      for (const iban of keys) events.push({ type: 'upsert', alert: alertFor(iban, round) });
    }
    for (const iban of keys.slice(0, 2000)) events.push({ type: 'deactivate', iban, n: 2 });
    await publish(events);
    const total = events.length;
    const env = tableEnv(topic, join(await storeDir(), 'table.db'), { LOG_LEVEL: 'info' });

    const first = runCli(['table'], env);
    const started = await first.logLine((l) => l.msg === 'alert table service started');
    const firstUrl = String(started.url);
    // Killed once a first transaction is committed (rows show), while the backlog is still applied.
    let applied = 0;
    await vi.waitFor(
      async () => {
        const text = await metrics(firstUrl);
        applied = metricOf(text, 'fraudlink_table_events_applied_total');
        expect(metricOf(text, 'fraudlink_table_rows')).toBeGreaterThan(0);
      },
      { timeout: 60_000, interval: 5 },
    );
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    // Killed while applying the backlog, not after.
    expect(applied).toBeLessThan(total);

    const second = runCli(['table'], env);
    const [restarted, resumed, caughtUp] = [
      second.logLine((l) => l.msg === 'alert table service started'),
      second.logLine((l) => l.msg === 'reading the alerts topic from the stored offsets'),
      second.logLine((l) => l.msg === 'the alert table has caught up with the topic'),
    ];
    const startOffsets = Object.values((await resumed).startOffsets as Record<string, string>).map(Number);
    const stored = startOffsets.reduce((sum, n) => sum + n, 0);
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(total);
    const url = String((await restarted).url);
    await caughtUp;
    // Only the records after the stored offsets were read again (the topic holds no markers).
    expect(metricOf(await metrics(url), 'fraudlink_table_records_read_total')).toBe(total - stored);

    const config = loadReplayConfig({ ...stackEnv(), ALERTS_TOPIC: topic });
    const replay = await replayAlerts({ kafka: config.kafka, registry: config.registry, alertsTopic: topic });
    const expected = new Map([...replay.alerts].map(([iban, a]) => [iban, a.eventId]));
    expect(expected.size).toBe(118_000);
    expect(await served(url)).toEqual(expected);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
