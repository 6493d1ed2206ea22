import { readFileSync } from 'node:fs';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { createKafkaClient, type IncomingRecord, type Producer } from '../../src/kafka/index.ts';
import { silentLogger } from '../../src/logger.ts';
import { freePort } from '../../src/stack/services.ts';
import { START_UP_RETRY_MESSAGE, type StartUpDependency } from '../../src/start-up.ts';
import { dedicatedBroker } from '../helpers/broker.ts';
import { collect } from '../helpers/kafka.ts';
import { registryProxy } from '../helpers/registry.ts';
import { verifierHarness } from './harness.ts';

const IBAN = 'DE89370400440532013000';
const ready = (l: Record<string, unknown>) => l.msg === 'verifier started';
const retriedAtStartUp = (dependency: StartUpDependency) => (l: Record<string, unknown>) =>
  l.msg === START_UP_RETRY_MESSAGE && l.waitingFor === dependency;
const restarting = (l: Record<string, unknown>) =>
  l.msg === 'the Kafka session failed; restarting it after a backoff';

/** A JSON request for IBAN, due two minutes from now, on `partition` if given. */
function jsonRequest(topic: string, requestId: string, partition?: number) {
  const requestedAt = Date.now();
  return {
    topic,
    key: requestId,
    value: Buffer.from(JSON.stringify({ requestId, iban: IBAN, partyName: 'Anna Schmidt', requestedAt })),
    headers: { 'content-type': 'application/json', 'vop-deadline': String(requestedAt + 120_000) },
    ...(partition !== undefined && { partition }),
  };
}

/** The keys of `records`, each as often as it occurs. */
const keysOf = (records: IncomingRecord[]) => records.map((r) => r.key?.toString() ?? '');

/** The verifier's readiness as /readyz answers it. */
async function readiness(opsUrl: string): Promise<{ ready: boolean; reason?: string }> {
  const answer = await fetch(`${opsUrl}/readyz`);
  return (await answer.json()) as { ready: boolean; reason?: string };
}

/** The peak resident set of a process (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(kb) * 1024;
}

describe('verifier outages and memory bounds', () => {
  it('rides out a registry outage: a request that needs the registry stays unanswered, the process runs on, and it and the requests after it are answered once when the registry is back', async () => {
    const h = await verifierHarness();
    const registry = await registryProxy(h.env.SCHEMA_REGISTRY_URL, '/subjects/');
    const { producer, replies, custom, verifier, encoder } = await h.startedThrough(registry.url);
    registry.outage(true);
    // Its reply goes to a topic whose subject has no schema yet: the reply schema must be registered.
    const requestedAt = Date.now();
    await producer.send([
      {
        topic: h.config.verifier.requestsTopic,
        partition: 0,
        key: 'needs-registry',
        value: encoder.encode({ requestId: 'needs-registry', iban: IBAN, partyName: 'Anna', requestedAt }),
        headers: { kafka_replyTopic: h.customReplyTopic, 'vop-deadline': String(requestedAt + 120_000) },
      },
      ...['after-1', 'after-2', 'after-3'].map((id) => jsonRequest(h.config.verifier.requestsTopic, id, 0)),
    ]);
    // Two failed sessions: the request was read again after the first restart, and still waits.
    await verifier.logLine(restarting);
    await verifier.logLine(restarting);
    expect(replies.records).toHaveLength(0);
    expect(custom.records).toHaveLength(0);
    registry.outage(false);
    await custom.until((r) => r.length >= 1);
    await replies.until((r) => r.length >= 3);
    verifier.child.kill('SIGTERM');
    expect(await verifier.exited).toBe(0);
    expect(keysOf(custom.records)).toEqual(['needs-registry']);
    expect((await h.registry.decode(custom.records[0]?.value ?? null)).value).toMatchObject({
      requestId: 'needs-registry',
      outcome: 'COMPLETED',
    });
    expect(keysOf(replies.records).sort()).toEqual(['after-1', 'after-2', 'after-3']);
  });

  it('rides out a broker outage longer than the Kafka client retries: no exit, not ready meanwhile, and every request written gets exactly one reply', async () => {
    const broker = await dedicatedBroker();
    const port = await freePort();
    // Each request is in flight for 3 s: some are always, and their transactions meet the outage.
    const h = await verifierHarness({ faults: { latencyMs: 3000 } });
    const env = { KAFKA_BROKERS: broker.brokers, HTTP_PORT: String(port) };
    const opsUrl = `http://127.0.0.1:${port}`;
    const kafka = createKafkaClient({
      config: { brokers: [broker.brokers], clientId: 'outage-test', ssl: false },
      logger: silentLogger(),
    });
    const verifier = h.start('one', env);
    await verifier.logLine(ready, 120_000);
    const producer: Producer = await kafka.producer();
    onTestFinished(() => producer.close().catch(() => {}));
    // A steady trickle: the requests the broker acknowledged are the ones owed a reply.
    const written: string[] = [];
    let trickling = true;
    let n = 0;
    const trickle = (async () => {
      while (trickling) {
        const id = `trickle-${n++}`;
        await producer.send([jsonRequest(h.config.verifier.requestsTopic, id)]).then(
          () => written.push(id),
          () => {},
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    onTestFinished(async () => {
      trickling = false;
      await trickle;
    });
    await vi.waitFor(() => expect(written.length).toBeGreaterThanOrEqual(20), { timeout: 30_000 });
    await broker.kill();
    await verifier.logLine(restarting, 120_000);
    expect(await readiness(opsUrl)).toEqual({ ready: false, reason: 'kafka session restarting' });
    // A session start failed too: the outage outlasted the client's retries at least twice over.
    await verifier.logLine(restarting, 120_000);
    expect(verifier.child.exitCode).toBeNull();
    expect((await fetch(`${opsUrl}/healthz`)).status).toBe(200);
    await broker.restart();
    await vi.waitFor(async () => expect((await readiness(opsUrl)).ready).toBe(true), {
      timeout: 120_000,
      interval: 250,
    });
    const writtenBefore = written.length;
    await vi.waitFor(() => expect(written.length).toBeGreaterThan(writtenBefore + 10), { timeout: 60_000 });
    trickling = false;
    await trickle;
    const replies = await collect(kafka, h.config.verifier.repliesTopic);
    await replies.until((r) => {
      const answered = new Set(keysOf(r));
      return written.every((id) => answered.has(id));
    }, 120_000);
    verifier.child.kill('SIGTERM');
    expect(await verifier.exited).toBe(0);
    // A send cut off by the outage may have been written all the same: owed a reply too, but one.
    const count = new Map<string, number>();
    for (const key of keysOf(replies.records)) count.set(key, (count.get(key) ?? 0) + 1);
    expect([...count].filter(([, times]) => times > 1)).toEqual([]);
    expect(written.filter((id) => !count.has(id))).toEqual([]);
  }, 360_000);

  it('keeps its memory bounded when a flood of 1 MB unreadable requests waits behind one slow request: the partition is paused', async () => {
    const latencyMs = 10_000;
    const h = await verifierHarness({ faults: { latencyMs } });
    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    const topic = h.config.verifier.requestsTopic;
    // The slow request first, then the flood on its partition: every DLQ copy of the flood waits for
    // the slow reply before it can commit (offset order). 200 MB held would be 200 MB of heap.
    const flood = 200;
    await producer.send([jsonRequest(topic, 'slow', 0)]);
    for (let sent = 0; sent < flood; sent += 20) {
      await producer.send(
        Array.from({ length: Math.min(20, flood - sent) }, (_, i) => ({
          topic,
          partition: 0,
          key: `junk-${sent + i}`,
          // Not Avro in the wire format (no magic byte): unreadable, copied to the DLQ whole.
          value: Buffer.alloc(1_000_000, 0x7a),
        })),
      );
    }
    const replies = await collect(h.kafka, h.config.verifier.repliesTopic);
    const verifier = h.start('one', { VERIFY_MAX_DEADLINE_MS: String(latencyMs * 4) });
    await verifier.logLine(ready);
    await replies.until((r) => r.length >= flood + 1, 120_000);
    const pid = verifier.child.pid as number;
    const peak = peakRss(pid);
    verifier.child.kill('SIGTERM');
    expect(await verifier.exited).toBe(0);
    // About 145 MB at rest; then at most 8 MiB of copies held, as much again handed out from the
    // batch under way, one fetch and the transaction writing them. Holding the whole flood went
    // past 440 MB.
    expect(peak).toBeLessThan(350 * 1024 * 1024);
    expect(verifier.stderr()).toContain('partitions paused');
    expect(keysOf(replies.records)).toContain('slow');
    expect(new Set(keysOf(replies.records)).size).toBe(flood + 1);
  }, 180_000);
});

describe('verifier start-up during an outage', () => {
  it('waits for a broker that comes up only after several start-up retries, then answers a request, never exiting', async () => {
    const h = await verifierHarness();
    const [kafkaPort, opsPort] = [await freePort(), await freePort()];
    const brokers = `127.0.0.1:${kafkaPort}`;
    const opsUrl = `http://127.0.0.1:${opsPort}`;
    const verifier = h.start('late-broker', { KAFKA_BROKERS: brokers, HTTP_PORT: String(opsPort) });
    await verifier.logLine(retriedAtStartUp('Kafka'), 120_000);
    expect(await readiness(opsUrl)).toEqual({ ready: false, reason: 'starting: waiting for Kafka' });
    expect((await fetch(`${opsUrl}/healthz`)).status).toBe(200);
    await verifier.logLine(retriedAtStartUp('Kafka'), 120_000);
    await dedicatedBroker({ port: kafkaPort });
    await verifier.logLine(ready, 120_000);
    const kafka = createKafkaClient({
      config: { brokers: [brokers], clientId: 'late-broker-test', ssl: false },
      logger: silentLogger(),
    });
    const replies = await collect(kafka, h.config.verifier.repliesTopic);
    const producer = await kafka.producer();
    onTestFinished(() => producer.close().catch(() => {}));
    await producer.send([jsonRequest(h.config.verifier.requestsTopic, 'after-the-outage')]);
    await replies.until((r) => r.length >= 1, 60_000);
    expect(keysOf(replies.records)).toEqual(['after-the-outage']);
    expect(verifier.child.exitCode).toBeNull();
    verifier.child.kill('SIGTERM');
    expect(await verifier.exited).toBe(0);
  }, 300_000);

  it('waits for a schema registry that fails at start for longer than any fixed number of retries, then starts and answers', async () => {
    const h = await verifierHarness();
    const registry = await registryProxy(h.env.SCHEMA_REGISTRY_URL, '/subjects/');
    registry.outage(true);
    const opsPort = await freePort();
    const opsUrl = `http://127.0.0.1:${opsPort}`;
    const replies = await collect(h.kafka, h.config.verifier.repliesTopic);
    const verifier = h.start('late-registry', {
      SCHEMA_REGISTRY_URL: registry.url,
      HTTP_PORT: String(opsPort),
    });
    // Five retries: at least 7.5 s of backoff (1, 2, 4 and 8 s, each at least halved) behind them.
    for (let i = 0; i < 5; i++) await verifier.logLine(retriedAtStartUp('the schema registry'));
    expect(await readiness(opsUrl)).toEqual({
      ready: false,
      reason: 'starting: waiting for the schema registry',
    });
    expect((await fetch(`${opsUrl}/healthz`)).status).toBe(200);
    registry.outage(false);
    await verifier.logLine(ready);
    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send([jsonRequest(h.config.verifier.requestsTopic, 'after-the-registry-outage')]);
    await replies.until((r) => r.length >= 1);
    expect(keysOf(replies.records)).toEqual(['after-the-registry-outage']);
    verifier.child.kill('SIGTERM');
    expect(await verifier.exited).toBe(0);
  }, 180_000);
});
