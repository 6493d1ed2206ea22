import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { expect, onTestFinished, vi } from 'vitest';
import type { AlertState } from '../../src/alert-events.ts';
import { loadTableConfig } from '../../src/config/index.ts';
import type { OutgoingRecord } from '../../src/kafka/index.ts';
import { makeIban } from '../../src/sandbox/data.ts';
import { prng } from '../../src/sandbox/prng.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { type AlertTable, type AlertTableOptions, openAlertTable } from '../../src/table/index.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { stackEnv } from '../helpers/stack.ts';

/** `count` distinct valid German IBANs. */
export function ibans(count: number, seed = 1): string[] {
  const rand = prng(seed);
  const out = new Set<string>();
  while (out.size < count) out.add(makeIban('DE', '', rand));
  return [...out];
}

export function alertFor(iban: string, n: number, qualification = 'CONFIRMED'): AlertState {
  return {
    eventId: `e-${iban}-${n}`,
    alertId: `a-${iban}`,
    iban,
    bic: n % 2 === 0 ? 'DEUTDEFFXXX' : null,
    qualification,
    qualificationRaw: null,
    reportsCount: n,
    updatedAt: 1_750_000_000_000 + n,
    observedAt: 1_750_000_000_500 + n,
  };
}

export type TestEvent =
  | { type: 'upsert'; alert: AlertState }
  | { type: 'deactivate'; iban: string; n: number }
  | { type: 'tombstone'; iban: string };

/** A fresh alerts topic on the shared stack, and a publisher of Avro alert events through the registry. */
export async function alertsTopic(partitions = 3) {
  const { kafka, registry } = testClients();
  const [topic = ''] = await testTopics(kafka, ['table.alerts'], partitions);
  const upserted = await registry.encoder<AlertState>(topic, loadSchema(SchemaNames.AlertUpserted));
  const deactivated = await registry.encoder<AlertState>(topic, loadSchema(SchemaNames.AlertDeactivated));
  const producer = await kafka.producer();
  onTestFinished(() => producer.close());
  const recordOf = (event: TestEvent): OutgoingRecord => {
    if (event.type === 'upsert') {
      return { topic, key: event.alert.iban, value: upserted.encode(event.alert) };
    }
    if (event.type === 'tombstone') return { topic, key: event.iban, value: null };
    return {
      topic,
      key: event.iban,
      value: deactivated.encode({ ...alertFor(event.iban, event.n), eventId: `d-${event.iban}-${event.n}` }),
    };
  };
  return {
    kafka,
    topic,
    /** Publishes the events in order (per IBAN: one key, one partition), 1,000 per send. */
    async publish(events: readonly TestEvent[]): Promise<void> {
      for (let i = 0; i < events.length; i += 1000) {
        await producer.send(events.slice(i, i + 1000).map(recordOf));
      }
    },
    /** Publishes raw records (e.g. an undecodable value). */
    async publishRaw(records: Omit<OutgoingRecord, 'topic'>[]): Promise<void> {
      await producer.send(records.map((r) => ({ ...r, topic })));
    },
  };
}

/** A temporary directory for stores, removed when the test ends. */
export async function storeDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'fraudlink-table-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The table service's environment for `topic` and the store `dbPath`. */
export function tableEnv(topic: string, dbPath: string, extra: Record<string, string> = {}) {
  return {
    ...stackEnv(),
    ALERTS_TOPIC: topic,
    TABLE_DB_PATH: dbPath,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** An in-process table on `topic`, closed when the test ends. */
export async function openTestTable(
  topic: string,
  dbPath: string,
  options: AlertTableOptions = {},
): Promise<AlertTable> {
  const config = loadTableConfig(tableEnv(topic, dbPath));
  const table = await openAlertTable(
    { kafka: config.kafka, registry: config.registry, alertsTopic: topic, dbPath },
    options,
  );
  onTestFinished(() => table.close());
  return table;
}

/** Every row of the table, page by page. */
export function allRows(table: AlertTable): Map<string, AlertState> {
  const rows = new Map<string, AlertState>();
  let cursor: string | undefined;
  do {
    const page = table.list({ limit: 1000, ...(cursor && { cursor }) });
    for (const alert of page.alerts) rows.set(alert.iban, alert);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return rows;
}

/** Resolves once the service at `url` answers /readyz 200: caught up with the end offsets taken at start. */
export async function untilReady(url: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const ready = await request(`${url}/readyz`);
      await ready.body.dump();
      expect(ready.statusCode).toBe(200);
    },
    { timeout: 30_000, interval: 50 },
  );
}
