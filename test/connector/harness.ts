import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { onTestFinished } from 'vitest';
import { loadConnectorConfig } from '../../src/config/index.ts';
import { connectorTopics } from '../../src/connector/index.ts';
import { parseInstant } from '../../src/instant.ts';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { type Collector, collect, testClients } from '../helpers/kafka.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { connectorNamesEnv, uniqueName } from '../helpers/stack.ts';

export interface DecodedEvent {
  type: string;
  eventId: string;
  alertId: string;
  iban: string;
  value: Record<string, unknown>;
  partition: number;
}

/** A sandbox, unique topics and the environment of a connector pointed at both. */
export async function connectorHarness(sandboxOptions: SandboxOptions = {}) {
  const { sandbox, env: sandboxEnv } = await testSandbox({ alerts: 200, pageSize: 50, ...sandboxOptions });
  const prefix = uniqueName('conn');
  const env = {
    ...sandboxEnv,
    ...connectorNamesEnv(prefix),
    ALERTS_TOPIC_PARTITIONS: '3',
    POLL_INTERVAL_MS: '50',
    CONNECTOR_TX_MAX_ROWS: '120',
    LOG_LEVEL: 'info',
  };
  // Knows only the registry URL: no fraudlink code decodes the events.
  const independent = new SchemaRegistry({ host: env.SCHEMA_REGISTRY_URL });
  const { kafka } = testClients();
  // Provisioned as the connector would, so tests can subscribe before the first start.
  const admin = await kafka.admin();
  await admin.provisionTopics(connectorTopics(loadConnectorConfig(env)));
  onTestFinished(async () => {
    await admin
      .deleteTopics([env.ALERTS_TOPIC, env.ALERTS_DLQ_TOPIC, env.CONNECTOR_OFFSETS_TOPIC])
      .catch(() => {});
    await admin.close();
  });
  const start = (extra: Record<string, string> = {}) => runCli(['connector'], { ...env, ...extra });
  let events: Collector | undefined;
  const decode = async (records: IncomingRecord[]): Promise<DecodedEvent[]> =>
    Promise.all(
      records
        .filter((r) => r.value !== null)
        .map(async (r) => {
          const value = (await independent.decode(r.value as Buffer)) as Record<string, unknown>;
          return {
            type: r.headers['event-type']?.toString() ?? '',
            eventId: String(value.eventId),
            alertId: String(value.alertId),
            iban: r.key?.toString() ?? '',
            value,
            partition: r.partition,
          };
        }),
    );
  /** Every alert's last event matches the sandbox's current row. */
  const matchesSandbox = (decoded: DecodedEvent[]): boolean => {
    const last = new Map<string, DecodedEvent>();
    for (const e of decoded) last.set(e.alertId, e);
    const rows = sandbox.currentRows();
    if (last.size !== rows.length) return false;
    return rows.every((row) => {
      const e = last.get(String(row.id));
      return (
        e !== undefined &&
        e.value.updatedAt === parseInstant(row.updatedAt) &&
        e.type === (row.isActive ? 'AlertUpserted' : 'AlertDeactivated') &&
        e.value.reportsCount === row.reportsCount &&
        e.value.qualification === row.qualification
      );
    });
  };
  return {
    sandbox,
    env,
    kafka,
    start,
    decode,
    async events(): Promise<Collector> {
      events ??= await collect(kafka, env.ALERTS_TOPIC, 'read_committed');
      return events;
    },
    /** Waits until the committed events reflect the sandbox's current state; returns them decoded. */
    async converged(timeoutMs = 90_000): Promise<DecodedEvent[]> {
      const collector = await this.events();
      let decoded: DecodedEvent[] = [];
      let decodedCount = 0;
      await collector.until(() => collector.records.length >= sandbox.currentRows().length, timeoutMs);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (collector.records.length !== decodedCount) {
          decodedCount = collector.records.length;
          decoded = await decode(collector.records.slice());
          if (matchesSandbox(decoded)) return decoded;
        }
        if (Date.now() > deadline)
          throw new Error(`events never matched the sandbox (${decodedCount} events)`);
        await collector.until((r) => r.length > decodedCount, Math.max(1, deadline - Date.now()));
      }
    },
  };
}

export function duplicates(events: DecodedEvent[]): string[] {
  const seen = new Set<string>();
  const dup: string[] = [];
  for (const e of events) {
    if (seen.has(e.eventId)) dup.push(e.eventId);
    seen.add(e.eventId);
  }
  return dup;
}

/** Per alert, events come in feed order: updatedAt never goes back. */
export function outOfOrder(events: DecodedEvent[]): string[] {
  const last = new Map<string, number>();
  const bad: string[] = [];
  for (const e of events) {
    const at = Number(e.value.updatedAt);
    if ((last.get(e.alertId) ?? -1) > at) bad.push(e.alertId);
    last.set(e.alertId, at);
  }
  return bad;
}

/** Export requests that started from the beginning of the feed (no cursor, no updatedAfter). */
export function fromTheStart(sandbox: Sandbox): number {
  return sandbox
    .requestLog()
    .filter((r) => r.path.endsWith('/export') && !r.query.cursor && !r.query.updatedAfter).length;
}
