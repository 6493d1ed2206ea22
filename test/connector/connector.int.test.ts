import { describe, expect, it } from 'vitest';
import { createKafkaClient, type IncomingRecord, subjectFor } from '../../src/kafka/index.ts';
import { silentLogger } from '../../src/logger.ts';
import { MALFORMED_KINDS, OVERSIZED_ROW_BYTES, OVERSIZED_ROW_DEPTH } from '../../src/sandbox/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { freePort } from '../../src/stack/services.ts';
import { START_UP_RETRY_MESSAGE } from '../../src/start-up.ts';
import { dedicatedBroker } from '../helpers/broker.ts';
import { expectCleanStop, expectStartUpStopped } from '../helpers/cli.ts';
import { collect } from '../helpers/kafka.ts';
import { registryProxy } from '../helpers/registry.ts';
import { connectorHarness, duplicates, fromTheStart, outOfOrder } from './harness.ts';

const ready = (line: Record<string, unknown>) => line.msg === 'connector session started';

describe('connector against the sandbox, a real broker and a real registry', () => {
  it('publishes every row change exactly once, in feed order per IBAN, including same-millisecond rows at the resume boundary', async () => {
    const h = await connectorHarness();
    const connector = h.start();
    await connector.logLine(ready);
    await h.converged();
    for (let round = 0; round < 4; round++) {
      h.sandbox.applyChanges(15); // fifteen changes sharing one millisecond
      await h.converged();
    }
    await expectCleanStop(connector);
    const events = await h.converged();
    expect(duplicates(events)).toEqual([]);
    expect(outOfOrder(events)).toEqual([]);
    expect(fromTheStart(h.sandbox)).toBe(1);
    expect(h.sandbox.requestLog().some((r) => r.query.updatedAfter !== undefined)).toBe(true);
    for (const e of events) expect(e.iban).toBe(e.value.iban);
  });

  // A registration cut off (a registry restarting) or timed out (one slow under load) ended the
  // start-up with exit 1 once a few retries were spent.
  it('waits out a registry that fails at start-up for longer than any fixed number of retries, not ready meanwhile, then starts', async () => {
    const h = await connectorHarness({ alerts: 20 });
    const registry = await registryProxy(h.env.SCHEMA_REGISTRY_URL, '/subjects/');
    registry.outage(true);
    const opsPort = await freePort();
    const connector = h.start({ SCHEMA_REGISTRY_URL: registry.url, HTTP_PORT: String(opsPort) });
    const retried = (l: Record<string, unknown>) =>
      l.msg === START_UP_RETRY_MESSAGE && l.waitingFor === 'the schema registry';
    // Five retries: at least 7.5 s of backoff (1, 2, 4 and 8 s, each at least halved) behind them.
    const first = await connector.logLine(retried);
    expect(first).toMatchObject({ retries: 1, step: 'registering the alert schemas' });
    for (let i = 1; i < 5; i++) await connector.logLine(retried);
    const readyz = await fetch(`http://127.0.0.1:${opsPort}/readyz`);
    expect(await readyz.json()).toEqual({
      ready: false,
      reason: 'starting: waiting for the schema registry',
    });
    expect((await fetch(`http://127.0.0.1:${opsPort}/healthz`)).status).toBe(200);
    registry.outage(false);
    await connector.logLine(ready);
    expect((await h.converged()).length).toBe(20);
    await expectCleanStop(connector);
  });

  // The connector exited 1 once kafkajs gave up connecting, and restarted into a crash loop.
  it('waits at start-up for a broker that comes up only after several retries, then publishes the feed, never exiting', async () => {
    const h = await connectorHarness({ alerts: 20 });
    const [kafkaPort, opsPort] = [await freePort(), await freePort()];
    const brokers = `127.0.0.1:${kafkaPort}`;
    const connector = h.start({ KAFKA_BROKERS: brokers, HTTP_PORT: String(opsPort) });
    const waitingForKafka = (l: Record<string, unknown>) =>
      l.msg === START_UP_RETRY_MESSAGE && l.waitingFor === 'Kafka';
    await connector.logLine(waitingForKafka, 120_000);
    const readyz = await fetch(`http://127.0.0.1:${opsPort}/readyz`);
    expect(await readyz.json()).toEqual({ ready: false, reason: 'starting: waiting for Kafka' });
    expect((await fetch(`http://127.0.0.1:${opsPort}/healthz`)).status).toBe(200);
    await connector.logLine(waitingForKafka, 120_000);
    await dedicatedBroker({ port: kafkaPort });
    await connector.logLine(ready, 120_000);
    const kafka = createKafkaClient({
      config: { brokers: [brokers], clientId: 'late-broker-test', ssl: false },
      logger: silentLogger(),
    });
    const events = await collect(kafka, h.env.ALERTS_TOPIC);
    await events.until((r) => r.length >= 20, 60_000);
    expect(new Set(events.records.map((r) => r.key?.toString())).size).toBe(20);
    expect(connector.child.exitCode).toBeNull();
    await expectCleanStop(connector);
  }, 300_000);

  // Start-up ignored the stop request: the process exited only after the 5 s start-up grace, the
  // registry asked again after the backoff (an unreachable broker: test/cli/connector.test.ts).
  it('ends a start-up backing off from a failing registry at once on SIGTERM, with exit 0', async () => {
    const h = await connectorHarness();
    const subject = subjectFor(h.env.ALERTS_TOPIC, loadSchema(SchemaNames.AlertUpserted));
    const registry = await registryProxy(h.env.SCHEMA_REGISTRY_URL, subject, {
      drop: Number.POSITIVE_INFINITY,
    });
    const connector = h.start({ SCHEMA_REGISTRY_URL: registry.url });
    await connector.logLine((l) => l.msg === START_UP_RETRY_MESSAGE);
    connector.child.kill('SIGTERM');
    await expectStartUpStopped(connector);
  });

  it('loses and duplicates nothing when killed with SIGKILL at random moments and restarted', async () => {
    const h = await connectorHarness({ alerts: 600, pageSize: 40 });
    const uncommitted = await collect(h.kafka, h.env.ALERTS_TOPIC, 'read_uncommitted');
    const committed = await h.events();
    let seen = 0;
    for (let kill = 0; kill < 6; kill++) {
      const connector = h.start();
      // Kill once the broker holds a few more records, often in the middle of a transaction; the
      // first time only after a commit, so that no restart may legitimately read from the start.
      seen += 1 + Math.floor(Math.random() * 120);
      h.sandbox.applyChanges(10);
      await uncommitted.until((r) => r.length >= seen);
      if (kill === 0) await committed.until((r) => r.length >= 1);
      connector.child.kill('SIGKILL');
      expect(await connector.exited).toBe('SIGKILL');
    }
    const last = h.start();
    await last.logLine(ready);
    const events = await h.converged();
    await expectCleanStop(last);
    expect(duplicates(events)).toEqual([]);
    expect(outOfOrder(events)).toEqual([]);
    expect(fromTheStart(h.sandbox)).toBe(1);
  });

  it('rides out 429 storms, 5xx bursts and connection resets without loss, duplicate or a skipped row', async () => {
    const h = await connectorHarness({
      alerts: 300,
      faults: { errorRate: 0.25, resetRate: 0.15, burst429: 3 },
    });
    const connector = h.start();
    await connector.logLine((l) => l.msg === 'export request failed, backing off');
    h.sandbox.applyChanges(20);
    const events = await h.converged();
    h.sandbox.setFaults({ errorRate: 0, resetRate: 0, burst429: 0 });
    await expectCleanStop(connector);
    expect(duplicates(events)).toEqual([]);
    const statuses = new Set(h.sandbox.requestLog().map((r) => r.status));
    expect(statuses).toContain(429);
    expect(statuses).toContain(503);
  });

  it('sends each kind of malformed row to the DLQ once, with its reason and raw row, and goes on', async () => {
    const h = await connectorHarness({ alerts: 20 });
    const kinds = MALFORMED_KINDS;
    for (const kind of kinds) h.sandbox.injectMalformedRow(kind);
    h.sandbox.applyChanges(5);
    const dlq = await collect(h.kafka, h.env.ALERTS_DLQ_TOPIC);
    const connector = h.start();
    await h.converged();
    const rejected = await dlq.until((r) => r.length >= kinds.length);
    // Poll a few more times over the same boundary: nothing is rejected twice.
    h.sandbox.applyChanges(3);
    await h.converged();
    await expectCleanStop(connector);
    expect(rejected).toHaveLength(kinds.length);
    const codes = rejected.map((r) => r.headers['error-code']?.toString()).sort();
    expect(codes).toEqual(
      [
        'ROW_ID_MISSING',
        'ROW_IBAN_MISSING',
        'ROW_IBAN_INVALID',
        'ROW_UPDATED_AT_INVALID',
        'ROW_IS_ACTIVE_INVALID',
        'ROW_REPORTS_COUNT_INVALID',
      ].sort(),
    );
    for (const r of rejected) {
      expect(r.headers.source?.toString()).toBe('export');
      expect(r.headers['error-message']?.toString()).toMatch(/./);
      expect(Number.isNaN(Date.parse(r.headers['observed-at']?.toString() ?? ''))).toBe(false);
      expect(JSON.parse(r.value?.toString() ?? '')).toHaveProperty('qualification', 'PENDING');
    }
    expect(rejected.find((r) => r.headers['error-code']?.toString() === 'ROW_ID_MISSING')?.key).toBeNull();
  });

  // A qualification nested 20,000 levels deep made JSON.stringify throw RangeError in the page
  // worker, and a 5 MiB bic made an event the alerts topic refused: either ended the connector with
  // exit 1, and every restart failed on the same page.
  it('sends a 20,000-deep row and an over-large row to the DLQ, cut down with a header, and publishes every other row once', async () => {
    const h = await connectorHarness({ alerts: 20 });
    h.sandbox.applyChanges(3);
    h.sandbox.injectMalformedRow('too-deep');
    h.sandbox.applyChanges(3);
    h.sandbox.injectMalformedRow('too-large');
    h.sandbox.applyChanges(3);
    const dlq = await collect(h.kafka, h.env.ALERTS_DLQ_TOPIC);
    const connector = h.start();
    const exited = connector.exited.then((code) => `exited with ${String(code)}`);
    const outcome = await Promise.race([h.converged().then(() => 'converged'), exited]);
    expect(outcome).toBe('converged');
    const rejected = await dlq.until((r) => r.length >= 2);
    // Polled again over the same rows: nothing is published or rejected twice.
    h.sandbox.applyChanges(3);
    const events = await h.converged();
    await expectCleanStop(connector);
    expect(duplicates(events)).toEqual([]);
    expect(dlq.records).toHaveLength(2);
    const byCode = new Map(rejected.map((r) => [r.headers['error-code']?.toString(), r]));
    expect([...byCode.keys()].sort()).toEqual(['ROW_TOO_DEEP', 'ROW_TOO_LARGE']);
    const deep = byCode.get('ROW_TOO_DEEP') as IncomingRecord;
    expect(deep.headers['dlq-truncated']).toBeUndefined();
    const deepText = deep.value?.toString() ?? '';
    expect(deepText).toContain(`"qualification":${'['.repeat(OVERSIZED_ROW_DEPTH)}]`);
    expect(JSON.parse(deepText)).toHaveProperty('id', deep.key?.toString());
    const large = byCode.get('ROW_TOO_LARGE') as IncomingRecord;
    const original = Number(large.headers['dlq-truncated']?.toString());
    expect(original).toBeGreaterThan(OVERSIZED_ROW_BYTES);
    expect(large.value?.length).toBeLessThan(OVERSIZED_ROW_BYTES);
    expect(large.value?.toString()).toMatch(/^\{"id":"BAD-2",/);
    expect(large.headers['error-message']?.toString()).toMatch(/max\.message\.bytes/);
    expect(events.some((e) => e.alertId.startsWith('BAD-'))).toBe(false);
  });

  // Regression: an upstream reading its cursor under another name answered each cursor with the
  // first page again, which was published again without end (100,000 records in 10 s), exit 0.
  it('stops with exit 2 naming EXPORT_CURSOR_PARAM, the first page published once, when the upstream reads its cursor under another name', async () => {
    const h = await connectorHarness({ alerts: 30, pageSize: 10, cursorParam: 'token' });
    const committed = await h.events();
    const connector = h.start();
    // Raced so that the defect fails the test at once rather than at its time limit.
    const outcome = await Promise.race([
      connector.exited,
      committed
        .until((r) => r.length > 10, 110_000)
        .then(
          () => 'published a page again',
          () => 'neither',
        ),
    ]);
    expect(outcome).toBe(2);
    expect(connector.stderr()).toMatch(/CONFIG_INVALID: .*EXPORT_CURSOR_PARAM: .*query parameter "cursor"/);
    const records: IncomingRecord[] = [];
    await h.kafka.readTopic(h.env.ALERTS_TOPIC, (read) => void records.push(...read));
    const events = await h.decode(records);
    const firstPage = h.sandbox.currentRows().slice(0, 10);
    expect(events.map((e) => e.alertId).sort()).toEqual(firstPage.map((r) => String(r.id)).sort());
    expect(duplicates(events)).toEqual([]);
    // With the service's name, it reads on from the cursor committed after that page.
    const fixed = h.start({ EXPORT_CURSOR_PARAM: 'token' });
    expect(duplicates(await h.converged())).toEqual([]);
    await expectCleanStop(fixed);
    const exports = h.sandbox.requestLog().filter((r) => r.path.endsWith('/export'));
    expect(exports.filter((r) => !r.query.token && !r.query.cursor && !r.query.updatedAfter)).toHaveLength(1);
  });

  it('lets a second instance fence the first, which exits with code 4, and stops cleanly on SIGTERM', async () => {
    const h = await connectorHarness({ alerts: 50 });
    const first = h.start();
    await first.logLine(ready);
    const second = h.start();
    await second.logLine(ready);
    h.sandbox.applyChanges(5);
    expect(await first.exited).toBe(4);
    expect(first.stderr()).toMatch(/KAFKA_FENCED/);
    await h.converged();
    await expectCleanStop(second);
  });
});
