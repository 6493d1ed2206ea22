import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { TimeoutError } from '../../src/errors.ts';
import { CODECS } from '../../src/kafka/codecs.ts';
import { batchBytes, type IncomingRecord, type Producer, subjectFor } from '../../src/kafka/index.ts';
import { REGISTRY_CLIENT_RETRIES } from '../../src/kafka/registry.ts';
import { frame } from '../../src/kafka/wire-format.ts';
import type { SandboxOptions } from '../../src/sandbox/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { START_UP_RETRY_MESSAGE } from '../../src/start-up.ts';
import { sendJson, serve } from '../api/servers.ts';
import { expectCleanStop, expectStartUpStopped, runCli } from '../helpers/cli.ts';
import { type Collector, collect, denyTopic, testProducer } from '../helpers/kafka.ts';
import { DATE_TIME_JSON_SCHEMA, registeredSchema, registryProxy } from '../helpers/registry.ts';
import { header, replyPartitionHeader, verifierHarness } from './harness.ts';

const IBAN = 'DE89370400440532013000';
const ready = (l: Record<string, unknown>) => l.msg === 'verifier started';

/** JSON requests for the sandbox holder of IBAN, keyed and identified by `ids`, due in two minutes. */
async function sendMatchingRequests(
  h: Awaited<ReturnType<typeof verifierHarness>>,
  producer: Producer,
  ids: string[],
): Promise<void> {
  const holder = h.sandbox.holderName(IBAN);
  await producer.send(
    ids.map((id) => ({
      topic: h.config.verifier.requestsTopic,
      key: id,
      value: Buffer.from(
        JSON.stringify({ requestId: id, iban: IBAN, partyName: holder, requestedAt: Date.now() }),
      ),
      headers: { 'content-type': 'application/json', 'vop-deadline': String(Date.now() + 120_000) },
    })),
  );
}

/** Resolves with the records collected once each of `ids` has a reply among them. */
const answeringEach = (replies: Collector, ids: string[]) =>
  replies.until((r) => new Set(r.map((x) => x.key?.toString())).size >= ids.length);

/** The replies' keys name each of `ids` exactly once. */
function expectEachAnsweredOnce(replies: IncomingRecord[], ids: string[]): void {
  const keys = replies.map((r) => r.key?.toString() ?? '');
  expect(keys.length).toBe(ids.length);
  expect(new Set(keys)).toEqual(new Set(ids));
}

/** A started verifier on a harness of its own, a producer, and a reader of its default reply topic. */
async function runningVerifier(sandboxOptions?: SandboxOptions) {
  const h = await verifierHarness(sandboxOptions);
  const producer = await testProducer(h.kafka);
  const replies = await collect(h.kafka, h.config.verifier.repliesTopic);
  const verifier = await h.started();
  return { h, producer, replies, verifier };
}

/** A JSON request for IBAN, made at `requestedAt` and due at `deadline`. */
function jsonRequest(topic: string, requestId: string, requestedAt: number, deadline: number) {
  return {
    topic,
    key: requestId,
    value: Buffer.from(JSON.stringify({ requestId, iban: IBAN, partyName: 'Anna Schmidt', requestedAt })),
    headers: { 'content-type': 'application/json', 'vop-deadline': String(deadline) },
  };
}

/** A JSON request on partition 0, made at `now` and due two minutes later, for `replyTopic` if given. */
function onPartitionZero(topic: string, requestId: string, now: number, replyTopic?: string) {
  const request = jsonRequest(topic, requestId, now, now + 120_000);
  return {
    ...request,
    partition: 0,
    headers: { ...request.headers, ...(replyTopic && { kafka_replyTopic: replyTopic }) },
  };
}

describe('verifier against the sandbox, a real broker and a real registry', () => {
  it('answers every outcome through the requester client: MTCH, CMTC, NMTC, NOAP, INVALID_REQUEST', async () => {
    const h = await verifierHarness();
    const verifier = await h.started();
    const client = await h.client();
    const holder = h.sandbox.holderName(IBAN);
    const near = `${holder.slice(0, -1)}x`;
    const [mtch, cmtc, nmtc, noap, badIban, emptyName] = await Promise.all([
      client.verify({ iban: IBAN, partyName: holder }),
      client.verify({ iban: IBAN, partyName: near }),
      client.verify({ iban: IBAN, partyName: 'Nobody At All' }),
      client.verify({ iban: 'GB82WEST12345698765432', partyName: holder }),
      client.verify({ iban: 'DE88370400440532013000', partyName: holder }),
      client.verify({ iban: IBAN, partyName: '  ' }),
    ]);
    expect(mtch).toMatchObject({ outcome: 'COMPLETED', nameMatch: 'MTCH', matchedName: null, error: null });
    expect(cmtc).toMatchObject({ outcome: 'COMPLETED', nameMatch: 'CMTC', matchedName: holder });
    expect(nmtc).toMatchObject({ outcome: 'COMPLETED', nameMatch: 'NMTC' });
    expect(noap).toMatchObject({ outcome: 'COMPLETED', nameMatch: 'NOAP' });
    expect(badIban).toMatchObject({ outcome: 'INVALID_REQUEST', error: { code: 'REQUEST_IBAN_INVALID' } });
    expect(emptyName).toMatchObject({ outcome: 'INVALID_REQUEST', error: { code: 'REQUEST_NAME_INVALID' } });
    expect(typeof mtch.upstreamLatencyMs).toBe('number');
    await expectCleanStop(verifier);
  });

  it('answers EXPIRED without calling upstream, and FAILED when upstream errors outlast the deadline', async () => {
    const { h, producer, replies, verifier } = await runningVerifier({ faults: { errorRate: 1 } });
    const now = Date.now();
    await producer.send([
      jsonRequest(h.config.verifier.requestsTopic, 'expired-1', now, now - 1),
      jsonRequest(h.config.verifier.requestsTopic, 'failed-1', now, now + 1500),
    ]);
    const seen = await replies.until((r) => r.length >= 2);
    const byKey = Object.fromEntries(
      seen.map((r) => [r.key?.toString(), JSON.parse(r.value?.toString() ?? '')]),
    );
    expect(byKey['expired-1']).toMatchObject({
      outcome: 'EXPIRED',
      error: { code: 'DEADLINE_PASSED' },
      upstreamLatencyMs: null,
    });
    expect(byKey['failed-1']).toMatchObject({ outcome: 'FAILED', error: { code: 'UPSTREAM_UNAVAILABLE' } });
    const verifyCalls = h.sandbox.requestLog().filter((r) => r.path === '/vop/v1/verify');
    expect(verifyCalls.length).toBeGreaterThan(1);
    await expectCleanStop(verifier);
  });

  it('cuts an upstream call off at the deadline and answers FAILED with UPSTREAM_TIMEOUT', async () => {
    const { h, producer, replies, verifier } = await runningVerifier({ faults: { latencyMs: 10_000 } });
    const now = Date.now();
    await producer.send([jsonRequest(h.config.verifier.requestsTopic, 'slow-1', now, now + 1000)]);
    const [reply] = await replies.until((r) => r.length >= 1);
    const answer = JSON.parse(reply?.value?.toString() ?? '');
    // Cut off at the deadline, not when the upstream's 10 s answer came (nor by API_TIMEOUT_MS).
    expect(answer).toMatchObject({
      outcome: 'FAILED',
      error: {
        code: 'UPSTREAM_TIMEOUT',
        message: expect.stringContaining('did not answer before the deadline'),
      },
    });
    expect(answer.respondedAt).toBeGreaterThanOrEqual(now + 1000);
    await expectCleanStop(verifier);
  });

  it('reads LZ4 requests (the topic compresses them) and writes its replies with KAFKA_COMPRESSION (ZSTD)', async () => {
    // The requests topic's compression.type makes the broker recompress with Kafka's Java LZ4 codec.
    const h = await verifierHarness({}, { requests: { 'compression.type': 'lz4' } });
    const verifier = await h.started('one', { KAFKA_COMPRESSION: 'zstd' });
    // The requester client reads the replies in this process: each ZSTD batch passes its codec.
    const zstdRead = vi.spyOn(CODECS.ZSTD, 'decompress');
    onTestFinished(() => zstdRead.mockRestore());
    const holder = h.sandbox.holderName(IBAN);
    const [avro, json] = await Promise.all([h.client('avro'), h.client('json')]);
    const answers = await Promise.all([
      avro.verify({ iban: IBAN, partyName: holder }),
      json.verify({ iban: IBAN, partyName: 'Nobody At All' }),
    ]);
    expect(answers).toMatchObject([
      { outcome: 'COMPLETED', nameMatch: 'MTCH' },
      { outcome: 'COMPLETED', nameMatch: 'NMTC' },
    ]);
    expect(zstdRead).toHaveBeenCalled();
    await expectCleanStop(verifier);
  });

  it('serves a plain-JSON request from a non-TypeScript client, echoing a Spring binary correlation id and reply partition', async () => {
    const h = await verifierHarness();
    const producer = await testProducer(h.kafka);
    const custom = await collect(h.kafka, h.customReplyTopic);
    const fallback = await collect(h.kafka, h.config.verifier.repliesTopic);
    const verifier = await h.started();
    const springId = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    const holder = h.sandbox.holderName(IBAN);
    await producer.send([
      {
        topic: h.config.verifier.requestsTopic,
        key: 'spring-1',
        value: Buffer.from(
          `{"requestId":"spring-1","iban":"${IBAN}","partyName":"${holder}","requestedAt":"${new Date().toISOString()}"}`,
        ),
        headers: {
          'content-type': 'application/json',
          kafka_correlationId: springId,
          kafka_replyTopic: h.customReplyTopic,
          kafka_replyPartition: replyPartitionHeader(2),
        },
      },
      {
        topic: h.config.verifier.requestsTopic,
        key: 'refused-1',
        value: Buffer.from(
          `{"requestId":"refused-1","iban":"${IBAN}","partyName":"${holder}","requestedAt":${Date.now()}}`,
        ),
        headers: { 'content-type': 'application/json', kafka_replyTopic: 'payments.internal.replies' },
      },
    ]);
    const [reply] = await custom.until((r) => r.length >= 1);
    expect(reply?.partition).toBe(2);
    expect(reply?.headers.kafka_correlationId).toEqual(springId);
    expect(header(reply as never, 'content-type')).toBe('application/json');
    expect(JSON.parse(reply?.value?.toString() ?? '')).toMatchObject({
      requestId: 'spring-1',
      outcome: 'COMPLETED',
      nameMatch: 'MTCH',
    });
    const [refused] = await fallback.until((r) => r.length >= 1);
    expect(refused?.key?.toString()).toBe('refused-1');
    expect(header(refused as never, 'kafka_correlationId')).toBe('refused-1');
    await expectCleanStop(verifier);
    expect(verifier.stderr()).toContain('kafka_replyTopic refused');
  });

  it('waits out a registry that fails its first registrations at start-up, then starts', async () => {
    const h = await verifierHarness();
    const subject = subjectFor(h.config.verifier.repliesTopic, loadSchema(SchemaNames.VerificationResult));
    // One call more than the client asks again by itself.
    const drop = REGISTRY_CLIENT_RETRIES + 1;
    const registry = await registryProxy(h.env.SCHEMA_REGISTRY_URL, subject, { drop });
    const verifier = h.start('one', { SCHEMA_REGISTRY_URL: registry.url });
    const retry = await verifier.logLine(
      (l) => l.msg === START_UP_RETRY_MESSAGE && l.waitingFor === 'the schema registry',
    );
    expect(retry.retries).toBe(1);
    await verifier.logLine(ready);
    await expectCleanStop(verifier);
  });

  it("replies on the default topic, with a warning, when the registry refuses the reply schema under kafka_replyTopic's subject (409), and does not ask again for later requests", async () => {
    const h = await verifierHarness();
    // The requester's subject holds another VerificationResult, which ours cannot read (BACKWARD).
    await h.registry.register(h.customReplyTopic, {
      type: 'record',
      name: 'VerificationResult',
      namespace: 'fraudlink.vop',
      fields: [{ name: 'ticket', type: 'string' }],
    });
    const subject = subjectFor(h.customReplyTopic, loadSchema(SchemaNames.VerificationResult));
    const registry = await registryProxy(h.env.SCHEMA_REGISTRY_URL, subject);
    const { producer, replies, custom, verifier, encoder } = await h.startedThrough(registry.url);
    const send = (requestId: string) => {
      const requestedAt = Date.now();
      return producer.send([
        {
          topic: h.config.verifier.requestsTopic,
          key: requestId,
          value: encoder.encode({ requestId, iban: IBAN, partyName: 'Anna Schmidt', requestedAt }),
          headers: { kafka_replyTopic: h.customReplyTopic, 'vop-deadline': String(requestedAt + 120_000) },
        },
      ]);
    };
    await send('subject-1');
    const [reply] = await replies.until((r) => r.length >= 1);
    expect(reply?.key?.toString()).toBe('subject-1');
    expect((await h.registry.decode(reply?.value ?? null)).value).toMatchObject({ requestId: 'subject-1' });
    const asked = [...registry.asked];
    expect(asked).toContainEqual(expect.stringMatching(/^POST .*\/versions$/));
    // Remembered: the next request's reply goes to the default topic without asking the registry.
    await send('subject-2');
    const [, later] = await replies.until((r) => r.length >= 2);
    expect(later?.key?.toString()).toBe('subject-2');
    expect(registry.asked).toEqual(asked);
    await expectCleanStop(verifier);
    expect(
      verifier.stderr().match(/the registry refuses the reply schema for kafka_replyTopic's subject/g),
    ).toHaveLength(1);
    expect(verifier.stderr()).toContain(
      "the registry refused the reply schema for kafka_replyTopic's subject lately",
    );
    expect(custom.records).toHaveLength(0);
  });

  it('replies on the default topic at once when kafka_replyTopic names an allow-listed topic that does not exist', async () => {
    const { h, producer, replies, verifier } = await runningVerifier();
    // Accepted by the harness's allow-list, never created. kafkajs's offsets lookup retried the
    // missing topic for ~20 s a time, ten times over, while the partition's later replies waited.
    const typo = `${h.prefix}.replies.typo`;
    const request = jsonRequest(h.config.verifier.requestsTopic, 'typo-1', Date.now(), Date.now() + 120_000);
    await producer.send([{ ...request, headers: { ...request.headers, kafka_replyTopic: typo } }]);
    const [reply] = await replies.until((r) => r.length >= 1);
    expect(reply?.key?.toString()).toBe('typo-1');
    // Not created by the lookup nor by a write (no producer or client may auto-create a topic).
    expect(await h.admin.partitionCount(typo)).toBe(0);
    await expectCleanStop(verifier);
    expect(verifier.stderr()).toContain('reply topic does not exist');
  });

  it('moves the replies a custom reply topic refuses for good (max.message.bytes) to the default topic, and keeps serving every requester', async () => {
    const { h, producer, replies, verifier } = await runningVerifier();
    // A requester's topic that takes no reply (a one-reply batch is 140 bytes or more).
    const small = `${h.prefix}.replies.small`;
    await h.admin.provisionTopics([
      { topic: small, partitions: 1, replicationFactor: 1, configs: { 'max.message.bytes': '100' } },
    ]);
    onTestFinished(() => h.admin.deleteTopics([small]).catch(() => {}));
    const custom = await collect(h.kafka, h.customReplyTopic);
    const encoder = await h.registry.encoder(
      h.config.verifier.requestsTopic,
      loadSchema(SchemaNames.VerificationRequest),
    );
    const { requestsTopic } = h.config.verifier;
    const now = Date.now();
    const json = (id: string, replyTopic?: string) => onPartitionZero(requestsTopic, id, now, replyTopic);
    // One partition: the requests of every requester commit in the same transactions.
    await producer.send([
      json('small-json', small),
      {
        topic: requestsTopic,
        partition: 0,
        key: 'small-avro',
        value: encoder.encode({
          requestId: 'small-avro',
          iban: IBAN,
          partyName: 'Anna Schmidt',
          requestedAt: now,
        }),
        headers: { kafka_replyTopic: small, 'vop-deadline': String(now + 120_000) },
      },
      json('custom-1', h.customReplyTopic),
      json('default-1'),
    ]);
    const exited = verifier.exited.then((code) => Promise.reject(new Error(`the verifier exited (${code})`)));
    const keys = (records: { key: Buffer | null }[]) => records.map((r) => r.key?.toString()).sort();
    const answered = await Promise.race([replies.until((r) => r.length >= 3), exited]);
    expect(keys(answered)).toEqual(['default-1', 'small-avro', 'small-json']);
    expect(keys(await custom.until((r) => r.length >= 1))).toEqual(['custom-1']);
    // The Avro reply is encoded under the default topic's subject.
    const avro = answered.find((r) => r.key?.toString() === 'small-avro');
    const defaultId = await h.registry.register(
      h.config.verifier.repliesTopic,
      loadSchema(SchemaNames.VerificationResult),
    );
    expect(avro?.value?.readUInt32BE(1)).toBe(defaultId);
    expect((await h.registry.decode(avro?.value ?? null)).value).toMatchObject({ requestId: 'small-avro' });

    // Remembered: a later request for it goes to the default topic without a failed transaction.
    await producer.send([json('small-later', small)]);
    const later = await Promise.race([replies.until((r) => r.length >= 4), exited]);
    expect(keys(later)).toContain('small-later');
    await expect
      .poll(() => h.admin.groupOffsets(h.config.verifier.groupId, requestsTopic), { timeout: 30_000 })
      .toContainEqual({ partition: 0, offset: '5' });
    await expectCleanStop(verifier);
    expect(verifier.stderr().match(/the broker refuses kafka_replyTopic for good/g)).toHaveLength(1);
    expect(verifier.stderr()).toContain('kafka_replyTopic refused by the broker lately');
    const written: unknown[] = [];
    await h.kafka.readTopic(small, (records) => void written.push(...records));
    expect(written).toEqual([]);
  });

  it('moves the replies to a requester topic the verifier may not even Describe (ACL) to the default topic, and keeps serving every requester', async () => {
    const { h, producer, replies, verifier } = await runningVerifier();
    const denied = `${h.prefix}.replies.denied`;
    await h.admin.provisionTopics([{ topic: denied, partitions: 1, replicationFactor: 1, configs: {} }]);
    onTestFinished(() => h.admin.deleteTopics([denied]).catch(() => {}));
    // Kafka refuses the Metadata of such a topic (TOPIC_AUTHORIZATION_FAILED) before any Produce.
    await denyTopic(denied, ['DESCRIBE', 'WRITE']);
    const { requestsTopic } = h.config.verifier;
    const now = Date.now();
    const json = (id: string, replyTopic?: string) => onPartitionZero(requestsTopic, id, now, replyTopic);
    await producer.send([json('denied-1', denied), json('default-1')]);
    const exited = verifier.exited.then((code) => Promise.reject(new Error(`the verifier exited (${code})`)));
    const keys = (records: { key: Buffer | null }[]) => records.map((r) => r.key?.toString()).sort();
    expect(keys(await Promise.race([replies.until((r) => r.length >= 2), exited]))).toEqual([
      'default-1',
      'denied-1',
    ]);
    // Remembered: a later request for it goes to the default topic without asking again.
    await producer.send([json('denied-2', denied)]);
    expect(keys(await Promise.race([replies.until((r) => r.length >= 3), exited]))).toContain('denied-2');
    await expect
      .poll(() => h.admin.groupOffsets(h.config.verifier.groupId, requestsTopic), { timeout: 30_000 })
      .toContainEqual({ partition: 0, offset: '3' });
    await expectCleanStop(verifier);
    expect(verifier.stderr().match(/the broker refuses kafka_replyTopic's metadata/g)).toHaveLength(1);
    expect(verifier.stderr()).toContain('kafka_replyTopic refused by the broker lately');
  });

  it('replies by key, with a warning, when kafka_replyPartition names a partition the reply topic does not have', async () => {
    const { h, producer, replies, verifier } = await runningVerifier();
    const holder = h.sandbox.holderName(IBAN);
    // The harness's reply topics have 3 partitions: 3 is one too many, -1 is no partition at all.
    await producer.send(
      [3, -1, 1].map((n) => ({
        topic: h.config.verifier.requestsTopic,
        key: `partition-${n}`,
        value: Buffer.from(
          JSON.stringify({
            requestId: `partition-${n}`,
            iban: IBAN,
            partyName: holder,
            requestedAt: Date.now(),
          }),
        ),
        headers: { 'content-type': 'application/json', kafka_replyPartition: replyPartitionHeader(n) },
      })),
    );
    const got = await replies.until((r) => r.length >= 3);
    const byKey = new Map(got.map((r) => [r.key?.toString(), r]));
    expect([...byKey.keys()].sort()).toEqual(['partition--1', 'partition-1', 'partition-3']);
    expect(byKey.get('partition-1')?.partition).toBe(1);
    for (const key of ['partition-3', 'partition--1']) {
      expect(JSON.parse(byKey.get(key)?.value?.toString() ?? '')).toMatchObject({ nameMatch: 'MTCH' });
    }
    await expectCleanStop(verifier);
    expect(verifier.stderr()).toContain('kafka_replyPartition out of range');
  });

  it('sends an unreadable value to the DLQ unchanged, its headers kept, and answers INVALID_REQUEST in the declared format', async () => {
    const h = await verifierHarness();
    const { producer, dlq, replies } = await h.observers();
    const verifier = await h.started();
    await producer.send([
      { topic: h.config.verifier.requestsTopic, key: 'garbage-avro', value: Buffer.from([7, 7, 7, 7, 7, 7]) },
      {
        topic: h.config.verifier.requestsTopic,
        key: 'garbage-json',
        value: Buffer.from('{not json'),
        headers: { 'content-type': 'application/json', kafka_correlationId: 'c-json', 'vop-deadline': '1' },
      },
    ]);
    const dead = await dlq.until((r) => r.length >= 2);
    // The request's own headers stay with it, beside the DLQ's.
    const deadJson = dead.find((r) => r.key?.toString() === 'garbage-json');
    expect(deadJson?.value?.toString()).toBe('{not json');
    expect(header(deadJson as never, 'content-type')).toBe('application/json');
    expect(header(deadJson as never, 'kafka_correlationId')).toBe('c-json');
    expect(header(deadJson as never, 'vop-deadline')).toBe('1');
    expect(header(deadJson as never, 'error-code')).toBe('REQUEST_UNREADABLE');
    const avro = dead.find((r) => r.key?.toString() === 'garbage-avro');
    expect(avro?.value).toEqual(Buffer.from([7, 7, 7, 7, 7, 7]));
    expect(header(avro as never, 'error-code')).toBe('REQUEST_UNREADABLE');
    expect(header(avro as never, 'error-message')).toMatch(/magic byte/);
    expect(header(avro as never, 'source-topic')).toBe(h.config.verifier.requestsTopic);
    expect(header(avro as never, 'source-offset')).toMatch(/^\d+$/);
    const answered = await replies.until((r) => r.length >= 2);
    const json = answered.find((r) => r.key?.toString() === 'garbage-json');
    expect(JSON.parse(json?.value?.toString() ?? '')).toMatchObject({ outcome: 'INVALID_REQUEST' });
    const avroReply = answered.find((r) => r.key?.toString() === 'garbage-avro');
    expect((await h.registry.decode(avroReply?.value ?? null)).value).toMatchObject({
      outcome: 'INVALID_REQUEST',
    });
    await expectCleanStop(verifier);
  });

  it('sends a value framed with the id of a schema that is not Avro to the DLQ, and answers the request after it', async () => {
    const { h, producer, replies, verifier } = await runningVerifier();
    const dlq = await collect(h.kafka, h.config.verifier.dlqTopic);
    // Another team's JSON schema in the same registry, one the registry client cannot even build.
    const id = await registeredSchema(`${h.prefix}-payments-value`, 'JSON', DATE_TIME_JSON_SCHEMA);
    const poison = frame(id, Buffer.from('{"at":"2020-01-01T00:00:00Z"}'));
    await producer.send([
      { topic: h.config.verifier.requestsTopic, key: 'json-schema', value: poison, partition: 0 },
      onPartitionZero(h.config.verifier.requestsTopic, 'after-it', Date.now()),
    ]);
    const [dead] = await dlq.until((r) => r.length >= 1);
    expect(dead?.value).toEqual(poison);
    expect(header(dead as never, 'error-code')).toBe('REQUEST_UNREADABLE');
    expect(header(dead as never, 'error-message')).toBe(`schema id ${id} is a JSON schema, not an Avro one`);
    expect(header(dead as never, 'source-topic')).toBe(h.config.verifier.requestsTopic);
    expect(header(dead as never, 'source-partition')).toBe('0');
    const answered = await replies.until((r) => r.length >= 2);
    const invalid = answered.find((r) => r.key?.toString() === 'json-schema');
    expect((await h.registry.decode(invalid?.value ?? null)).value).toMatchObject({
      outcome: 'INVALID_REQUEST',
    });
    const after = answered.find((r) => r.key?.toString() === 'after-it');
    expect(JSON.parse(after?.value?.toString() ?? '')).toMatchObject({
      requestId: 'after-it',
      outcome: 'COMPLETED',
    });
    await expectCleanStop(verifier);
  });

  it('copies an unreadable request as large as the requests topic takes to the DLQ it creates, headers added', async () => {
    // The harness leaves the DLQ topic to the verifier.
    const h = await verifierHarness({}, { dlq: false });
    const producer = await testProducer(h.kafka);
    const verifier = await h.started();
    // The collector starts once the verifier has created the DLQ topic (it would otherwise be
    // created on first use, with the broker's defaults).
    const dlq = await collect(h.kafka, h.config.verifier.dlqTopic);
    const limit = await h.admin.maxMessageBytes(h.config.verifier.requestsTopic);
    // One record batch all but 64 bytes of the topic's limit: the DLQ's headers take ~200.
    const value = Buffer.alloc(limit - 64 - batchBytes([{ topic: '', key: 'large', value: null }]), 'x');
    await producer.send([{ topic: h.config.verifier.requestsTopic, key: 'large', value }]);
    const [dead] = await Promise.race([
      dlq.until((r) => r.length >= 1),
      verifier.exited.then((code) => Promise.reject(new Error(`the verifier exited (${code})`))),
    ]);
    expect(dead?.value?.equals(value)).toBe(true);
    expect(header(dead as never, 'error-code')).toBe('REQUEST_UNREADABLE');
    await expectCleanStop(verifier);
  });

  it('cuts down the DLQ copy of an unreadable request too large for an existing DLQ topic, and answers the next request', async () => {
    const h = await verifierHarness({}, { dlq: { 'max.message.bytes': '4000' } });
    const { producer, dlq, replies } = await h.observers();
    const verifier = h.start();
    await verifier.logLine(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('the DLQ topic takes smaller records'),
    );
    const { requestsTopic } = h.config.verifier;
    // Unreadable and keyless (no reply possible), all but 64 bytes of the requests topic's limit.
    const limit = await h.admin.maxMessageBytes(requestsTopic);
    const value = Buffer.alloc(limit - 64 - batchBytes([{ topic: '', key: null, value: null }]), 'x');
    await producer.send([
      { topic: requestsTopic, key: null, partition: 0, value },
      onPartitionZero(requestsTopic, 'after-it', Date.now()),
    ]);
    const [answered] = await Promise.race([
      replies.until((r) => r.length >= 1),
      verifier.exited.then((code) => Promise.reject(new Error(`the verifier exited (${code})`))),
    ]);
    expect(answered?.key?.toString()).toBe('after-it');
    const [copy] = await dlq.until((r) => r.length >= 1);
    expect(header(copy as never, 'error-code')).toBe('REQUEST_UNREADABLE');
    expect(header(copy as never, 'source-offset')).toBe('0');
    expect(Number(header(copy as never, 'dlq-truncated'))).toBeGreaterThan(limit - 64);
    // As much of the value as the DLQ takes.
    expect(copy?.value?.length).toBeGreaterThan(3_000);
    expect(copy?.value?.equals(value.subarray(0, copy.value.length))).toBe(true);
    expect(verifier.stderr()).toContain('cut down to fit');
    await expectCleanStop(verifier);
  });

  it("with KAFKA_COMPRESSION, measures DLQ copies uncompressed: one over the DLQ topic's limit is cut down, whatever it compresses to", async () => {
    const h = await verifierHarness({}, { dlq: { 'max.message.bytes': '4000' } });
    const { producer, dlq, replies } = await h.observers();
    const verifier = await h.started('one', { KAFKA_COMPRESSION: 'zstd' });
    const { requestsTopic } = h.config.verifier;
    // 3,000 bytes fit the DLQ's 4,000 whole; 5,000 of random bytes (which do not compress) do not.
    await producer.send([
      { topic: requestsTopic, key: 'small', partition: 1, value: Buffer.alloc(3_000, 'x') },
      { topic: requestsTopic, key: 'noise', partition: 1, value: randomBytes(5_000) },
    ]);
    const copies = await Promise.race([
      dlq.until((r) => r.length >= 2),
      verifier.exited.then((code) => Promise.reject(new Error(`the verifier exited (${code})`))),
    ]);
    const small = copies.find((r) => r.key?.toString() === 'small');
    expect(small?.value).toEqual(Buffer.alloc(3_000, 'x'));
    expect(header(small as never, 'dlq-truncated')).toBeUndefined();
    const noise = copies.find((r) => r.key?.toString() === 'noise');
    expect(Number(header(noise as never, 'dlq-truncated'))).toBeGreaterThan(5_000);
    expect(noise?.value?.length).toBeLessThan(4_000);
    // Both requests are answered INVALID_REQUEST, and their offsets committed.
    await replies.until((r) => r.length >= 2);
    await expectCleanStop(verifier);
    const committed = await h.admin.groupOffsets(h.config.verifier.groupId, requestsTopic);
    expect(committed.find((c) => c.partition === 1)?.offset).toBe('2');
  });

  it('gives every request exactly one reply even when the verifier is killed with SIGKILL mid-load', async () => {
    const h = await verifierHarness({ faults: { latencyMs: 5 } });
    const producer = await testProducer(h.kafka);
    const ids = Array.from({ length: 400 }, (_, i) => `load-${i}`);
    await sendMatchingRequests(h, producer, ids);
    const uncommitted = await collect(h.kafka, h.config.verifier.repliesTopic, 'read_uncommitted');
    for (const [i, target] of [40, 150, 260].entries()) {
      const verifier = h.start();
      await uncommitted.until((r) => r.length >= target);
      verifier.child.kill('SIGKILL');
      expect(await verifier.exited, `kill ${i}`).toBe('SIGKILL');
    }
    // Awaited: the killed instances may have committed every reply, and a SIGTERM that comes before
    // the verifier has set up its signal handling ends it by the signal, not with exit 0.
    const last = await h.started();
    const committed = await collect(h.kafka, h.config.verifier.repliesTopic, 'read_committed');
    const replies = await answeringEach(committed, ids);
    await expectCleanStop(last);
    expectEachAnsweredOnce(replies, ids);
  });

  it('answers each request once when a second instance joins while every request is in flight', async () => {
    // Slow enough upstream that the rebalance comes while the first instance still waits on every call.
    const h = await verifierHarness({ faults: { latencyMs: 6000 } });
    const producer = await testProducer(h.kafka);
    const uncommitted = await collect(h.kafka, h.config.verifier.repliesTopic, 'read_uncommitted');
    const committed = await collect(h.kafka, h.config.verifier.repliesTopic, 'read_committed');
    const one = await h.started('one', { LOG_LEVEL: 'debug' });
    const ids = Array.from({ length: 30 }, (_, i) => `rebalance-${i}`);
    await sendMatchingRequests(h, producer, ids);
    // kafkajs then fetches the partitions the first instance keeps again from their committed offset.
    const rejoined = one.logLine((l) => l.msg === 'Consumer has joined the group');
    const two = h.start('two');
    await Promise.all([rejoined, two.logLine(ready)]);
    expect(uncommitted.records.length, 'replies before the rebalance').toBe(0);
    const replies = await answeringEach(committed, ids);
    await expectCleanStop(one, two);
    expectEachAnsweredOnce(replies, ids);
  });

  it('answers each request once when an instance is cut off from its group mid-load (SIGSTOP past its session) and comes back', async () => {
    // Answers come 3 s after each call: the first instance is stopped while it waits on every one.
    const h = await verifierHarness({ faults: { latencyMs: 3000 } });
    const producer = await testProducer(h.kafka);
    const one = await h.started('one', { LOG_LEVEL: 'debug' });
    const ids = Array.from({ length: 30 }, (_, i) => `cut-off-${i}`);
    let asked = 0;
    const allAsked = one.logLine((l) => l.msg === 'asking upstream' && ++asked === ids.length);
    await sendMatchingRequests(h, producer, ids);
    await allAsked;
    one.child.kill('SIGSTOP');
    // The second instance's join waits until the first one's session (10 s) expires; it then owns
    // every partition and answers every request from the committed offsets.
    const committed = await collect(h.kafka, h.config.verifier.repliesTopic, 'read_committed');
    const two = h.start('two');
    await answeringEach(committed, ids);
    // The first instance comes back, with its answers from upstream waiting, and learns that it is
    // no longer a member; whether it first commits or first rejoins, none of its answers may commit.
    const rejoined = one.logLine((l) => l.msg === 'Consumer has joined the group');
    one.child.kill('SIGCONT');
    await rejoined;
    await expectCleanStop(one, two);
    const replies: IncomingRecord[] = [];
    await h.kafka.readTopic(h.config.verifier.repliesTopic, (records) => void replies.push(...records));
    expectEachAnsweredOnce(replies, ids);
  });

  it('gives the requester the FAILED reply of a request cut off at its deadline, not its own timeout', async () => {
    const h = await verifierHarness({ faults: { latencyMs: 10_000 } });
    const verifier = await h.started();
    const client = await h.client('json');
    // The client's vop-deadline fell at its timeout: the reply came after the caller had given up.
    const reply = await client.verify({ iban: IBAN, partyName: 'Anna Schmidt' }, { timeoutMs: 4000 });
    expect(reply).toMatchObject({ outcome: 'FAILED', error: { code: 'UPSTREAM_TIMEOUT' } });
    expect(client.stats.late).toBe(0);
    await expectCleanStop(verifier);
  });

  it('times out a request in the requester client and ignores its late reply', async () => {
    const h = await verifierHarness();
    const client = await h.client('json');
    const holder = h.sandbox.holderName(IBAN);
    // No verifier runs yet: the request times out whatever its deadline, and is answered (EXPIRED)
    // late, once the verifier has started.
    await expect(client.verify({ iban: IBAN, partyName: holder }, { timeoutMs: 150 })).rejects.toBeInstanceOf(
      TimeoutError,
    );
    const verifier = await h.started();
    // The next answer arrives after the late one: by then the late reply has been seen and set aside.
    const ok = await client.verify({ iban: IBAN, partyName: holder }, { timeoutMs: 10_000 });
    expect(ok).toMatchObject({ outcome: 'COMPLETED', nameMatch: 'MTCH' });
    const burst = await Promise.all(
      Array.from({ length: 50 }, () =>
        client.verify({ iban: IBAN, partyName: holder }, { timeoutMs: 10_000 }),
      ),
    );
    expect(burst.every((r) => r.nameMatch === 'MTCH')).toBe(true);
    expect(client.stats.pending).toBe(0);
    expect(client.stats.late).toBe(1);
    // close() while a verify() is under way rejects that verify() and nothing else: the rejection
    // reaches its caller (whose handler is attached before close(), as a caller's must be: vitest
    // fails the run on an unhandled rejection).
    const closing = expect(
      client.verify({ iban: IBAN, partyName: holder }, { timeoutMs: 10_000 }),
    ).rejects.toThrow(/closed/);
    await client.close();
    await closing;
    await expectCleanStop(verifier);
  });

  it('stops with exit 0 on a SIGTERM that arrives during start-up, instead of losing it', async () => {
    const h = await verifierHarness();
    const verifier = runCli(['verifier', '--instance-id', 'early-stop'], { ...h.env, LOG_LEVEL: 'debug' });
    // kafkajs's first line: start-up is under way, the handlers are in place.
    await verifier.logLine((l) => l.namespace !== undefined);
    verifier.child.kill('SIGTERM');
    await verifier.logLine((l) => l.msg === 'stop requested during start-up: aborting it');
    expect(await verifier.exited).toBe(0);
    expect(verifier.stderr()).toContain('verifier stopped');
  });

  // Start-up ignored the stop request: the process exited only after the 5 s start-up grace, with
  // kafkajs still retrying the broker, or the registry call still waiting for its 10 s timeout.
  it('ends a start-up retrying an unreachable broker at once on SIGTERM, with exit 0', async () => {
    const h = await verifierHarness();
    const verifier = h.start('unreachable', { KAFKA_BROKERS: '127.0.0.1:1' });
    await verifier.logLine((l) => String(l.msg).includes('ECONNREFUSED 127.0.0.1:1'));
    verifier.child.kill('SIGTERM');
    await expectStartUpStopped(verifier);
  });

  it('ends a start-up waiting on a registry that never answers at once on SIGTERM, with exit 0', async () => {
    const h = await verifierHarness();
    const subject = subjectFor(h.config.verifier.requestsTopic, loadSchema(SchemaNames.VerificationRequest));
    const registry = await registryProxy(h.env.SCHEMA_REGISTRY_URL, subject, { stall: true });
    const verifier = h.start('stalled', { SCHEMA_REGISTRY_URL: registry.url });
    await registry.firstAsked;
    verifier.child.kill('SIGTERM');
    await expectStartUpStopped(verifier);
  });

  it('stops with exit code 3 when the upstream refuses the API key, leaving the request unanswered', async () => {
    const h = await verifierHarness();
    const replies = await collect(h.kafka, h.config.verifier.repliesTopic);
    const producer = await testProducer(h.kafka);
    const verifier = runCli(['verifier', '--instance-id', 'bad-key'], { ...h.env, API_KEY: 'not-a-tenant' });
    await verifier.logLine(ready);
    await producer.send([
      {
        topic: h.config.verifier.requestsTopic,
        key: 'refused-key-1',
        value: Buffer.from(
          JSON.stringify({
            requestId: 'refused-key-1',
            iban: IBAN,
            partyName: 'Anna Schmidt',
            requestedAt: Date.now(),
          }),
        ),
        headers: { 'content-type': 'application/json' },
      },
    ]);
    expect(await verifier.exited).toBe(3);
    expect(verifier.stderr()).toContain('the upstream refused the API key');
    expect(replies.records).toHaveLength(0);
  });

  it('once the upstream refuses the API key, hands out and commits nothing more: the calls in flight are ended, later requests left unanswered', async () => {
    const h = await verifierHarness();
    // A stand-in upstream: refuses the key to the request for "Refused", holds the one for "Slow" for
    // a long while (its end tells whether the verifier gave up on it), answers the others at once.
    const slowAsked = Promise.withResolvers<void>();
    const slowEnded = Promise.withResolvers<'abandoned by the verifier' | 'answered'>();
    const upstream = await serve((_req, res, _attempt, seen) => {
      const name = (JSON.parse(seen.body) as { party: { name: string } }).party.name;
      if (name === 'Refused') return sendJson(res, 401, { code: 'UNAUTHORIZED', message: 'unknown key' });
      if (name !== 'Slow') return sendJson(res, 200, { partyNameMatch: 'MTCH' });
      slowAsked.resolve();
      const answer = setTimeout(() => {
        sendJson(res, 200, { partyNameMatch: 'MTCH' });
        slowEnded.resolve('answered');
      }, 5000);
      res.on('close', () => {
        clearTimeout(answer);
        slowEnded.resolve('abandoned by the verifier');
      });
    });
    onTestFinished(() => upstream.close());
    const producer = await testProducer(h.kafka);
    const verifier = runCli(['verifier', '--instance-id', 'refused-midway'], {
      ...h.env,
      API_BASE_URL: upstream.url,
    });
    await verifier.logLine(ready);
    const request = (requestId: string, partition: number, partyName: string, deadlineMs: number) => ({
      topic: h.config.verifier.requestsTopic,
      key: requestId,
      partition,
      value: Buffer.from(JSON.stringify({ requestId, iban: IBAN, partyName, requestedAt: Date.now() })),
      headers: { 'content-type': 'application/json', 'vop-deadline': String(Date.now() + deadlineMs) },
    });
    await producer.send([request('slow', 0, 'Slow', 60_000)]);
    await slowAsked.promise;
    await producer.send([request('refused', 1, 'Refused', 60_000)]);
    await verifier.logLine((l) => l.msg === 'the upstream refused the API key; stopping');
    // Requests arriving while it stops: they used to be handed out, fail at the closed API client
    // and be committed as FAILED replies the upstream never saw.
    await producer.send([1, 2, 3].map((n) => request(`late-${n}`, 2, 'Anna Schmidt', 1500)));
    expect(await verifier.exited).toBe(3);
    const replies: string[] = [];
    await h.kafka.readTopic(
      h.config.verifier.repliesTopic,
      (records) => void replies.push(...records.map((r) => String(r.key))),
      { awaitOpenTransactions: { timeoutMs: 30_000 } },
    );
    expect(replies).toEqual([]);
    expect(await slowEnded.promise).toBe('abandoned by the verifier');
  });
});
