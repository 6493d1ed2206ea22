import { describe, expect, it, onTestFinished } from 'vitest';
import { loadReplayConfig } from '../../src/config/index.ts';
import { parseInstant } from '../../src/instant.ts';
import { createSchemaRegistry } from '../../src/kafka/index.ts';
import { frame } from '../../src/kafka/wire-format.ts';
import { type AlertChange, type AlertState, replayAlerts } from '../../src/replay/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import type { VerificationRequest } from '../../src/verifier/request.ts';
import { connectorHarness } from '../connector/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { DATE_TIME_JSON_SCHEMA, registeredSchema } from '../helpers/registry.ts';

/** The sandbox's active alerts keyed by IBAN, as replay must rebuild them. */
function expectedTable(rows: readonly object[]) {
  const table = new Map<string, { alertId: string; updatedAt: number | null }>();
  for (const row of rows as Record<string, unknown>[]) {
    if (row.isActive)
      table.set(String(row.iban), { alertId: String(row.id), updatedAt: parseInstant(row.updatedAt) });
  }
  return table;
}

/** A connector run over `alerts` sandbox alerts, stopped once the topic holds them all. */
async function publishedAlerts(alerts: number) {
  const h = await connectorHarness({ alerts });
  const connector = h.start();
  await h.converged();
  connector.child.kill('SIGTERM');
  await connector.exited;
  return { h, env: { ...h.env, LOG_LEVEL: 'warn' } };
}

describe('replay of the compacted alerts topic', () => {
  it('rebuilds the sandbox state after a connector run, deactivations and tombstones included, and follows new changes', async () => {
    const h = await connectorHarness({ alerts: 150 });
    const connector = h.start();
    h.sandbox.applyChanges(40);
    await h.converged();
    const config = loadReplayConfig(h.env);
    const replay = { kafka: config.kafka, registry: config.registry, alertsTopic: config.alertsTopic };

    const result = await replayAlerts(replay);
    const expected = expectedTable(h.sandbox.currentRows());
    expect(result.deactivated).toBeGreaterThan(0);
    expect(
      new Map([...result.alerts].map(([iban, a]) => [iban, { alertId: a.alertId, updatedAt: a.updatedAt }])),
    ).toEqual(expected);

    // A tombstone removes an alert; then follow applies changes made after the snapshot.
    const [victim] = result.alerts.keys();
    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send([{ topic: config.alertsTopic, key: victim ?? '', value: null }]);
    const controller = new AbortController();
    const changes: AlertChange[] = [];
    let snapshot: ReadonlyMap<string, AlertState> | undefined;
    let wake = () => {};
    const following = replayAlerts(replay, {
      follow: true,
      signal: controller.signal,
      onSnapshot: (table) => {
        snapshot = new Map(table);
        wake();
      },
      onChange: (c) => {
        changes.push(c);
        wake();
      },
    });
    await new Promise<void>((resolve) => {
      wake = () => snapshot && resolve();
    });
    expect(snapshot?.has(victim ?? '')).toBe(false);
    h.sandbox.applyChanges(10);
    await new Promise<void>((resolve) => {
      wake = () => changes.length >= 10 && resolve();
    });
    controller.abort();
    const final = await following;
    // Each change says what it did to the table: an upsert carries the alert, a removal does not.
    for (const c of changes) {
      expect(c.alert === null, `${c.type} at ${c.partition}/${c.offset}`).toBe(c.type !== 'AlertUpserted');
      if (c.alert) expect(c.alert.iban).toBe(c.iban);
    }
    await h.converged();
    const expectedAfter = expectedTable(h.sandbox.currentRows());
    expectedAfter.delete(victim ?? '');
    for (const [iban, alert] of final.alerts)
      expect(expectedAfter.get(iban)?.updatedAt, iban).toBe(alert.updatedAt);
    connector.child.kill('SIGTERM');
    expect(await connector.exited).toBe(0);
  });

  it('follows no faster than its listener: a promise onChange returns is awaited before the next change', async () => {
    const { h } = await publishedAlerts(10);
    const config = loadReplayConfig(h.env);
    const controller = new AbortController();
    const steps: string[] = [];
    let snapshotTaken = () => {};
    const snapshot = new Promise<void>((resolve) => {
      snapshotTaken = resolve;
    });
    const following = replayAlerts(
      { kafka: config.kafka, registry: config.registry, alertsTopic: config.alertsTopic },
      {
        follow: true,
        signal: controller.signal,
        onSnapshot: () => snapshotTaken(),
        onChange: async (change) => {
          steps.push(`start ${change.offset}`);
          await new Promise((resolve) => setImmediate(resolve));
          steps.push(`end ${change.offset}`);
          if (steps.length === 6) controller.abort();
        },
      },
    );
    await snapshot;
    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    // Three tombstones in one batch of one partition: without the wait, all three start at once.
    await producer.send(
      ['DE1', 'DE2', 'DE3'].map((key) => ({ topic: config.alertsTopic, key, value: null, partition: 0 })),
    );
    await following;
    const offsets = steps.map((s) => s.split(' ')[1]);
    expect(steps.map((s) => s.split(' ')[0])).toEqual(['start', 'end', 'start', 'end', 'start', 'end']);
    expect(offsets[0]).toBe(offsets[1]);
  });

  it('writes JSON Lines or a summary when piped, and stops on an undecodable record unless told to skip it', async () => {
    const { h, env } = await publishedAlerts(60);

    const lines = runCli(['replay'], env);
    expect(await lines.exited).toBe(0);
    const alerts = lines
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AlertState);
    expect(alerts.length).toBe(expectedTable(h.sandbox.currentRows()).size);
    expect(lines.stderr()).not.toMatch(/\[=*-*\]|ETA/); // no progress bar when stderr is not a terminal

    const summary = runCli(['replay', '--summary'], env);
    expect(await summary.exited).toBe(0);
    expect(JSON.parse(summary.stdout())).toMatchObject({ active: alerts.length });

    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send([
      {
        topic: h.env.ALERTS_TOPIC,
        key: 'DE89370400440532013000',
        value: Buffer.from('not avro'),
        partition: 0,
      },
    ]);
    // A record of another schema, registered and decodable, but not an alert event.
    const registry = createSchemaRegistry(loadReplayConfig(env).registry);
    const request = await registry.encoder<VerificationRequest>(
      h.env.ALERTS_TOPIC,
      loadSchema(SchemaNames.VerificationRequest),
    );
    await producer.send([
      {
        topic: h.env.ALERTS_TOPIC,
        key: 'DE89370400440532013000',
        value: request.encode({
          requestId: 'r-1',
          iban: 'DE89370400440532013000',
          partyName: 'Anna',
          requestedAt: Date.now(),
        }),
        partition: 1,
      },
    ]);
    // A value framed with the id of another team's JSON schema, one the registry client cannot build.
    const json = await registeredSchema(`${h.env.ALERTS_TOPIC}-payments`, 'JSON', DATE_TIME_JSON_SCHEMA);
    await producer.send([
      {
        topic: h.env.ALERTS_TOPIC,
        key: 'DE89370400440532013000',
        value: frame(json, Buffer.from('{"at":"2020-01-01T00:00:00Z"}')),
        partition: 2,
      },
    ]);
    const strict = runCli(['replay'], env);
    expect(await strict.exited).toBe(1);
    // Whichever bad record it reads first (partitions are read concurrently) stops it.
    expect(strict.stderr()).toMatch(/DECODE_FAILED: .*partition \d offset \d+ (cannot be decoded|holds a)/);
    const lenient = runCli(['replay', '--skip-undecodable', '--summary'], env);
    expect(await lenient.exited).toBe(0);
    // The bad records all carry one IBAN, whose state in the table they may have changed: it is named.
    expect(JSON.parse(lenient.stdout())).toMatchObject({ skipped: 3, uncertain: 1 });
    expect(lenient.stderr()).toMatch(/"uncertain":1,"ibans":\["DE…3000"\].*may be out of date/);
    expect(lenient.stderr()).toMatch(/holds a fraudlink\.vop\.VerificationRequest, not an alert event/);
    expect(lenient.stderr()).toMatch(/cannot be decoded: schema id \d+ is a JSON schema, not an Avro one/);
    // An unreachable registry is not undecodable data: even with --skip-undecodable replay stops
    // with the registry error instead of skipping every record and printing a table with holes.
    const noRegistry = runCli(['replay', '--skip-undecodable', '--summary'], {
      ...env,
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9/apis/ccompat/v7',
    });
    expect(await noRegistry.exited).toBe(1);
    expect(noRegistry.stderr()).toMatch(/SCHEMA_REGISTRY: .*ECONNREFUSED/);
    expect(noRegistry.stderr()).not.toContain('skipping an undecodable record');
    expect(noRegistry.stdout()).toBe('');

    const bad = runCli(['replay'], { ...env, KAFKA_BROKERS: 'nohostport' });
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toContain('KAFKA_BROKERS');
  });

  it('ends quietly, exit 0, when its reader goes away (`| head`), and names an --out it cannot write', async () => {
    const { h, env } = await publishedAlerts(30);
    const active = expectedTable(h.sandbox.currentRows()).size;

    const follow = runCli(['replay', '--follow'], env);
    // The reader takes the whole snapshot, then goes away.
    await new Promise<void>((resolve) => {
      const onData = () => {
        if (follow.stdout().split('\n').length > active) {
          follow.child.stdout?.off('data', onData);
          resolve();
        }
      };
      follow.child.stdout?.on('data', onData);
      onData();
    });
    follow.child.stdout?.destroy();
    // The next changes find the pipe closed: replay stops following instead of crashing on EPIPE.
    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    const ibans = [...expectedTable(h.sandbox.currentRows()).keys()];
    await producer.send(ibans.map((iban) => ({ topic: h.env.ALERTS_TOPIC, key: iban, value: null })));
    expect(await follow.exited).toBe(0);
    expect(follow.stderr()).not.toMatch(/EPIPE|Error/);

    const unwritable = runCli(['replay', '--out', '/nonexistent-dir/alerts.jsonl'], env);
    expect(await unwritable.exited).toBe(2);
    expect(unwritable.stderr()).toMatch(
      /USAGE: --out \/nonexistent-dir\/alerts\.jsonl cannot be written: ENOENT/,
    );
  });
});
