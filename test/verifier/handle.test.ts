import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import { AbortedError, DecodeError, SchemaRegistryError } from '../../src/errors.ts';
import {
  batchBytes,
  createSchemaRegistry,
  type IncomingRecord,
  type OutgoingRecord,
  type SchemaRegistryClient,
  type UnreadableBatch,
} from '../../src/kafka/index.ts';
import { createLogger } from '../../src/logger.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { type HandlerDeps, handleRequest } from '../../src/verifier/handle.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';
import { RefusedReplyTopics } from '../../src/verifier/refused-topics.ts';
import { logCapture } from '../helpers/log.ts';
import { testHandlerDeps } from './deps.ts';

const IBAN = 'DE89370400440532013000';

const config = loadVerifierConfig({
  KAFKA_BROKERS: 'localhost:9092',
  SCHEMA_REGISTRY_URL: 'http://localhost:8081',
  API_BASE_URL: 'http://localhost:1',
  API_KEY: 'key',
  VERIFY_REPLY_TOPICS: '^vop\\.verification\\.replies\\..*',
});

/** A JSON request for IBAN, keyed `req-1`, with `headers` beside its content-type and correlation id. */
function jsonRequest(headers: Record<string, Buffer> = {}): IncomingRecord {
  return {
    topic: config.verifier.requestsTopic,
    partition: 0,
    offset: '0',
    key: Buffer.from('req-1'),
    value: Buffer.from(
      JSON.stringify({
        requestId: 'req-1',
        iban: IBAN,
        partyName: 'Max Mustermann',
        requestedAt: Date.now(),
      }),
    ),
    headers: {
      'content-type': Buffer.from('application/json'),
      kafka_correlationId: Buffer.from('c-1'),
      ...headers,
    },
    timestamp: Date.now(),
  };
}

/** Handler dependencies with an upstream that answers MTCH and reply topics of 3 partitions. */
function deps(overrides: Partial<HandlerDeps> = {}): HandlerDeps {
  return testHandlerDeps(config.verifier, {
    api: { verify: async () => ({ partyNameMatch: 'MTCH' }) },
    replyEncoder: async () => Promise.reject(new Error('a JSON request gets a JSON reply')),
    ...overrides,
  });
}

/** One JSON request through the handler; returns the log lines. */
async function handledAt(level: string) {
  const out = logCapture();
  const records = await handleRequest(
    jsonRequest(),
    deps({ logger: createLogger({ level, destination: out.stream }) }),
  );
  return { records, lines: out.lines };
}

describe('handleRequest logging', () => {
  it('logs each verification at debug with the IBAN masked', async () => {
    const { records, lines } = await handledAt('debug');
    expect(records).toHaveLength(1);
    const verified = lines.filter((l) => l.msg === 'verified');
    expect(verified).toEqual([
      expect.objectContaining({ requestId: 'req-1', iban: 'DE…3000', outcome: 'COMPLETED' }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(IBAN);
  });

  it('writes no line per verification at info', async () => {
    const { records, lines } = await handledAt('info');
    expect(records).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'verified')).toEqual([]);
  });
});

describe('handleRequest reply routing', () => {
  it('ends a reply topic lookup that hangs when the stop signal aborts, answering nothing', async () => {
    const asked = Promise.withResolvers<string>();
    const stop = new AbortController();
    const handling = handleRequest(
      jsonRequest({ kafka_replyTopic: Buffer.from('vop.verification.replies.typo') }),
      deps({
        // A lookup that never settles, as one kafkajs kept retrying for minutes did.
        partitionCount: (topic) => {
          asked.resolve(topic);
          return new Promise<number>(() => {});
        },
      }),
      stop.signal,
    );
    expect(await asked.promise).toBe('vop.verification.replies.typo');
    stop.abort();
    expect(await handling).toEqual([]);
  });

  it('ends a reply encoder lookup that hangs when the stop signal aborts', async () => {
    const asked = Promise.withResolvers<void>();
    const stop = new AbortController();
    const avro = jsonRequest();
    delete avro.headers['content-type'];
    avro.value = null; // unreadable: its INVALID_REQUEST reply is Avro, so it needs the encoder
    const handling = handleRequest(
      avro,
      deps({
        replyEncoder: () => {
          asked.resolve();
          return new Promise(() => {});
        },
      }),
      stop.signal,
    );
    await asked.promise;
    stop.abort();
    expect(await handling).toEqual([]);
  });
});

describe('handleRequest abandoned by stop()', () => {
  const custom = 'vop.verification.replies.team-a';
  /** A request in `format`, asking for `replyTopic` when given. */
  function requestIn(format: 'json' | 'avro', replyTopic?: string): IncomingRecord {
    const record = jsonRequest(replyTopic ? { kafka_replyTopic: Buffer.from(replyTopic) } : {});
    if (format === 'avro') delete record.headers['content-type'];
    return record;
  }
  /** Reads an Avro request as the JSON one it stands for. */
  const registry = {
    decode: async (value: Buffer) => ({
      schemaId: 1,
      name: SchemaNames.VerificationRequest,
      value: JSON.parse(value.toString()),
    }),
  } as never;

  it.each([
    ['a JSON request', 'json', undefined],
    ['a JSON request for a custom reply topic', 'json', custom],
    ['an Avro request', 'avro', undefined],
    ['an Avro request for a custom reply topic', 'avro', custom],
  ] as const)(
    'answers nothing and counts nothing for %s whose upstream call the stop signal ended',
    async (_, format, replyTopic) => {
      const asked = Promise.withResolvers<void>();
      const stop = new AbortController();
      const metrics = createVerifierMetrics(new Registry());
      const handling = handleRequest(
        requestIn(format, replyTopic),
        deps({
          registry,
          replyEncoder: async () => ({ encode: () => Buffer.from('avro reply') }) as never,
          metrics,
          // As the API client does: the signal ends the call with an AbortedError.
          api: {
            verify: (_request, options) =>
              new Promise((_resolve, reject) => {
                options?.signal?.addEventListener('abort', () => reject(new AbortedError('call aborted')));
                asked.resolve();
              }),
          },
        }),
        stop.signal,
      );
      await asked.promise;
      stop.abort();
      expect(await handling).toEqual([]);
      expect((await metrics.requests.get()).values).toEqual([]);
      expect((await metrics.inFlight.get()).values[0]?.value).toBe(0);
    },
  );
});

describe('handleRequest when the broker refuses a reply topic', () => {
  const teamA = 'vop.verification.replies.team-a';
  /** kafkajs's Metadata refusal of a topic the verifier may not Describe, its topic named (topic-errors.ts). */
  const metadataRefused = () =>
    Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), {
      type: 'TOPIC_AUTHORIZATION_FAILED',
      topicErrors: [{ topic: teamA, partition: -1, type: 'TOPIC_AUTHORIZATION_FAILED' }],
    });

  it("replies on the default topic when the broker refuses the reply topic's metadata (no Describe ACL), and remembers the topic", async () => {
    const looked: string[] = [];
    const refused = new RefusedReplyTopics(60_000);
    const metrics = createVerifierMetrics(new Registry());
    const out = logCapture();
    const handlerDeps = deps({
      partitionCount: async (topic) => {
        looked.push(topic);
        throw metadataRefused();
      },
      refusedReplyTopics: refused,
      metrics,
      logger: createLogger({ level: 'warn', destination: out.stream }),
    });
    const asking = jsonRequest({ kafka_replyTopic: Buffer.from(teamA) });
    const [first] = await handleRequest(asking, handlerDeps);
    expect(first?.topic).toBe(config.verifier.repliesTopic);
    expect(refused.has(teamA)).toBe(true);
    // Remembered: the next request's reply goes there without a lookup.
    const [second] = await handleRequest(asking, handlerDeps);
    expect(second?.topic).toBe(config.verifier.repliesTopic);
    expect(looked).toEqual([teamA]);
    expect((await metrics.refusedReplyTopics.get()).values[0]?.value).toBe(2);
    expect(out.lines.map((l) => [l.msg, l.refused])).toEqual([
      [
        "the broker refuses kafka_replyTopic's metadata (no Describe ACL for the verifier, an invalid name, ...); replying on the default topic",
        teamA,
      ],
      ['kafka_replyTopic refused by the broker lately; replying on the default topic', teamA],
    ]);
  });

  it('stops (rejects) when the lookup fails otherwise, rather than moving the reply', async () => {
    const unreachable = new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9092');
    const handling = handleRequest(
      jsonRequest({ kafka_replyTopic: Buffer.from(teamA) }),
      deps({
        partitionCount: async () => Promise.reject(unreachable),
        refusedReplyTopics: new RefusedReplyTopics(60_000),
      }),
    );
    await expect(handling).rejects.toBe(unreachable);
  });
});

describe('handleRequest when the registry refuses a reply topic', () => {
  /** An unreadable Avro request asking for `topic`: its INVALID_REQUEST reply needs the topic's encoder. */
  function avroRequestFor(topic: string): IncomingRecord {
    const record = jsonRequest({ kafka_replyTopic: Buffer.from(topic) });
    delete record.headers['content-type'];
    record.value = Buffer.from([0, 0, 0, 0, 9]);
    return record;
  }
  const custom = 'vop.verification.replies.team-a';
  const encoder = { encode: () => Buffer.from('avro reply') } as never;
  const registry = { decode: async () => Promise.reject(new DecodeError('schema id 9 is unknown')) } as never;

  /**
   * A registry on port 0 that answers a subject's config with `compatibility` and a registration with
   * `status`; with `everything`, it answers every request so (refused credentials).
   */
  async function fakeRegistry(
    status: number,
    options: { everything?: boolean; compatibility?: string; body?: object } = {},
  ) {
    const server = createServer((req, res) => {
      const config = req.method === 'GET' && req.url?.includes('/config/');
      const [code, body] =
        config && !options.everything
          ? [200, { compatibilityLevel: options.compatibility ?? 'BACKWARD' }]
          : [
              status,
              options.body ?? { error_code: status === 422 ? 42201 : status, message: `answered ${status}` },
            ];
      req.resume();
      res.writeHead(code, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
      res.end(JSON.stringify(body));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    return createSchemaRegistry({ url: `http://127.0.0.1:${port}/apis/ccompat/v7` });
  }

  /** Handler deps whose custom-topic encoder registers through `client`; the default topic's is cached. */
  const through = (client: SchemaRegistryClient, overrides: Partial<HandlerDeps> = {}) =>
    deps({
      registry,
      replyEncoder: async (topic) =>
        topic === custom ? client.encoder(topic, loadSchema(SchemaNames.VerificationResult)) : encoder,
      ...overrides,
    });

  it.each([
    ['the schema is incompatible with the one registered under the subject (409)', 409, undefined],
    ['the schema is invalid under the subject (422)', 422, undefined],
    ['the subject has a compatibility level other than ours', 200, 'NONE'],
  ])('replies on the default topic, warning and counting, when %s', async (_, status, compatibility) => {
    const metrics = createVerifierMetrics(new Registry());
    const out = logCapture();
    const client = await fakeRegistry(status, compatibility === undefined ? {} : { compatibility });
    const records = await handleRequest(
      avroRequestFor(custom),
      through(client, { metrics, logger: createLogger({ level: 'warn', destination: out.stream }) }),
    );
    const reply = records.find((r) => r.topic !== config.verifier.dlqTopic);
    expect(reply).toMatchObject({
      topic: config.verifier.repliesTopic,
      key: 'req-1',
      value: Buffer.from('avro reply'),
    });
    expect(reply).not.toHaveProperty('partition');
    expect((await metrics.refusedReplyTopics.get()).values[0]?.value).toBe(1);
    expect(out.lines).toContainEqual(expect.objectContaining({ level: 'warn', refused: custom }));
  });

  it('remembers the refusal: later Avro replies for the topic go to the default topic without asking, its JSON replies still to it', async () => {
    const asked: string[] = [];
    const client = await fakeRegistry(409);
    const refused = new RefusedReplyTopics(60_000);
    const out = logCapture();
    const handlerDeps = through(client, {
      refusedReplyTopics: refused,
      logger: createLogger({ level: 'warn', destination: out.stream }),
    });
    const replyEncoder = handlerDeps.replyEncoder;
    handlerDeps.replyEncoder = (topic) => {
      asked.push(topic);
      return replyEncoder(topic);
    };
    const replyTopics = async (record: IncomingRecord) =>
      (await handleRequest(record, handlerDeps))
        .filter((r) => r.topic !== config.verifier.dlqTopic)
        .map((r) => r.topic);
    expect(await replyTopics(avroRequestFor(custom))).toEqual([config.verifier.repliesTopic]);
    expect(refused.schemaRefused(custom)).toBe(true);
    expect(await replyTopics(avroRequestFor(custom))).toEqual([config.verifier.repliesTopic]);
    expect(asked).toEqual([custom, config.verifier.repliesTopic, config.verifier.repliesTopic]);
    expect(await replyTopics(jsonRequest({ kafka_replyTopic: Buffer.from(custom) }))).toEqual([custom]);
    expect(out.lines.map((l) => [l.msg, l.refused])).toEqual([
      [
        "the registry refuses the reply schema for kafka_replyTopic's subject; replying on the default topic",
        custom,
      ],
      [
        "the registry refused the reply schema for kafka_replyTopic's subject lately; replying on the default topic",
        custom,
      ],
    ]);
  });

  it.each([401, 403])(
    'stops (rejects), as on the default topic, when the registry refuses the verifier its credentials (%i), rather than moving the reply',
    async (status) => {
      const metrics = createVerifierMetrics(new Registry());
      const client = await fakeRegistry(status, { everything: true });
      const handling = handleRequest(avroRequestFor(custom), through(client, { metrics }));
      await expect(handling).rejects.toBeInstanceOf(SchemaRegistryError);
      await expect(handling).rejects.toThrow(`answered ${status}`);
      expect((await metrics.refusedReplyTopics.get()).values[0]?.value).toBe(0);
    },
  );

  // It stopped the verifier: the request, delivered again after the restart, stopped it again, for
  // every requester, until the registry took writes again.
  it("replies on the default topic, remembered, when a read-only registry cannot register the reply schema under kafka_replyTopic's subject (Apicurio's read-only storage: 409)", async () => {
    const metrics = createVerifierMetrics(new Registry());
    const refused = new RefusedReplyTopics(60_000);
    const out = logCapture();
    const client = await fakeRegistry(409, {
      body: { error_code: 0, message: 'Unsupported write operation. Storage is in read-only mode.' },
    });
    const records = await handleRequest(
      avroRequestFor(custom),
      through(client, {
        metrics,
        refusedReplyTopics: refused,
        logger: createLogger({ level: 'warn', destination: out.stream }),
      }),
    );
    const replies = records.filter((r) => r.topic !== config.verifier.dlqTopic);
    expect(replies.map((r) => r.topic)).toEqual([config.verifier.repliesTopic]);
    expect((await metrics.refusedReplyTopics.get()).values[0]?.value).toBe(1);
    expect(refused.schemaRefused(custom)).toBe(true);
    expect(out.lines.map((l) => l.msg)).toEqual([
      "the registry takes no writes now (read-only): the reply schema cannot be registered under kafka_replyTopic's subject; replying on the default topic",
    ]);
  });

  it('stops (rejects) when the registry cannot answer, rather than moving the reply', async () => {
    const down = new SchemaRegistryError('registering subject failed: ECONNREFUSED', { retriable: true });
    const refusing = async (topic: string) => {
      if (topic === custom) throw down;
      return encoder;
    };
    await expect(
      handleRequest(avroRequestFor(custom), deps({ registry, replyEncoder: refusing })),
    ).rejects.toBe(down);
  });
});

describe('handleRequest on bad input', () => {
  it('sends an invalid request without an id (no record key) to the DLQ instead of dropping it', async () => {
    const record = { ...jsonRequest(), key: null };
    record.value = Buffer.from(
      JSON.stringify({ requestId: 'req-1', iban: 'DE00', partyName: 'Anna', requestedAt: Date.now() }),
    );
    const records = await handleRequest(record, deps());
    expect(records).toEqual([
      {
        topic: config.verifier.dlqTopic,
        key: null,
        value: record.value,
        headers: expect.objectContaining({
          'content-type': Buffer.from('application/json'),
          kafka_correlationId: Buffer.from('c-1'),
          'error-code': 'REQUEST_IBAN_INVALID',
          'error-message': expect.any(String),
          'source-topic': config.verifier.requestsTopic,
          'source-partition': '0',
          'source-offset': '0',
        }),
      },
    ]);
  });

  it('cuts down the DLQ copy of an unreadable request that the DLQ topic would refuse, and still answers it', async () => {
    const value = Buffer.from(`{${'x'.repeat(2_000)}`);
    const record = { ...jsonRequest(), offset: '41', value };
    const metrics = createVerifierMetrics(new Registry());
    const out = logCapture();
    const logger = createLogger({ level: 'warn', destination: out.stream });
    const records = await handleRequest(record, deps({ dlqMaxBytes: 2_000, metrics, logger }));

    const copy = records.find((r) => r.topic === config.verifier.dlqTopic);
    expect(batchBytes([copy as OutgoingRecord])).toBeLessThanOrEqual(2_000);
    // As much of the value as fits, and its size before in the header.
    expect(copy?.value?.length).toBeGreaterThan(1_500);
    expect(value.subarray(0, copy?.value?.length).equals(copy?.value as Buffer)).toBe(true);
    expect(Number(copy?.headers?.['dlq-truncated'])).toBeGreaterThan(2_000);
    expect(copy?.headers).toMatchObject({ 'error-code': 'REQUEST_UNREADABLE', 'source-offset': '41' });
    expect(records.map((r) => r.topic)).toContain(config.verifier.repliesTopic);
    expect((await metrics.dlq.get()).values).toMatchObject([
      { labels: { code: 'REQUEST_UNREADABLE' }, value: 1 },
    ]);
    expect(out.lines.map((l) => l.msg)).toContain(
      "the DLQ copy is larger than the DLQ topic's max.message.bytes: cut down to fit",
    );
    // The same request fits a DLQ that takes its size: copied whole.
    const whole = await handleRequest(record, deps({ dlqMaxBytes: 3_000 }));
    expect(whole.find((r) => r.topic === config.verifier.dlqTopic)?.value).toEqual(value);
  });
});

describe('handleRequest with an unreadable record batch', () => {
  const batch: UnreadableBatch = {
    firstOffset: '10',
    lastOffset: '12',
    codec: 'zstd',
    reason: 'could not decompress a ZSTD record batch (40 bytes compressed): corrupt',
    bytes: 40,
    data: Buffer.alloc(40, 7),
  };
  const marker: IncomingRecord = {
    topic: config.verifier.requestsTopic,
    partition: 2,
    offset: '12',
    key: null,
    value: null,
    headers: {},
    timestamp: 0,
    unreadableBatch: batch,
  };

  it('makes it one DLQ record naming the batch, with its compressed bytes, and no reply', async () => {
    const metrics = createVerifierMetrics(new Registry());
    let asked = 0;
    const records = await handleRequest(
      marker,
      deps({
        metrics,
        api: {
          verify: async () => {
            asked++;
            return { partyNameMatch: 'MTCH' };
          },
        },
      }),
    );
    expect(records).toEqual([
      {
        topic: config.verifier.dlqTopic,
        key: null,
        value: batch.data,
        headers: {
          'error-code': 'REQUEST_BATCH_UNREADABLE',
          'error-message': batch.reason,
          'source-topic': config.verifier.requestsTopic,
          'source-partition': '2',
          'source-offset-first': '10',
          'source-offset-last': '12',
          'source-codec': 'zstd',
        },
      },
    ]);
    expect(asked).toBe(0);
    expect((await metrics.dlq.get()).values).toMatchObject([
      { labels: { code: 'REQUEST_BATCH_UNREADABLE' }, value: 1 },
    ]);
  });

  it('leaves its compressed bytes out when they do not fit the DLQ topic', async () => {
    const big = { ...marker, unreadableBatch: { ...batch, bytes: 5_000, data: Buffer.alloc(5_000, 7) } };
    const [copy] = await handleRequest(big, deps({ dlqMaxBytes: 2_000 }));
    expect(copy?.value).toBeNull();
    expect(copy?.headers).toMatchObject({ 'source-offset-last': '12', 'dlq-truncated': expect.any(String) });
  });
});

describe('handleRequest deadlines', () => {
  const longMax = Buffer.alloc(8);
  longMax.writeBigInt64BE(0x7fff_ffff_ffff_ffffn); // Java's Long.MAX_VALUE, "no deadline"

  it.each([
    ['an 8-byte Long.MAX_VALUE', longMax],
    ['a 400-digit number', Buffer.from('9'.repeat(400))],
    ['the year 9999', Buffer.from(String(Date.UTC(9999, 0, 1)))],
  ])('brings %s in to VERIFY_MAX_DEADLINE_MS, so the upstream is not retried without end', async (_, raw) => {
    const deadlines: number[] = [];
    const before = Date.now();
    const records = await handleRequest(
      jsonRequest({ 'vop-deadline': raw }),
      deps({
        api: {
          verify: async (_body, options) => {
            deadlines.push(options?.deadline ?? Number.NaN);
            return { partyNameMatch: 'MTCH' };
          },
        },
      }),
    );
    expect(deadlines).toHaveLength(1);
    expect(deadlines[0]).toBeGreaterThanOrEqual(before + config.verifier.maxDeadlineMs);
    expect(deadlines[0]).toBeLessThanOrEqual(Date.now() + config.verifier.maxDeadlineMs);
    expect(JSON.parse(String(records[0]?.value))).toMatchObject({ outcome: 'COMPLETED' });
  });

  it('keeps a nearer deadline as the request gave it', async () => {
    const due = Date.now() + 3000;
    const deadlines: number[] = [];
    await handleRequest(
      jsonRequest({ 'vop-deadline': Buffer.from(String(due)) }),
      deps({
        api: {
          verify: async (_body, options) => {
            deadlines.push(options?.deadline ?? Number.NaN);
            return { partyNameMatch: 'MTCH' };
          },
        },
      }),
    );
    expect(deadlines).toEqual([due]);
  });

  it('answers INVALID_REQUEST to a vop-deadline it cannot read, without asking upstream', async () => {
    let asked = 0;
    const records = await handleRequest(
      jsonRequest({ 'vop-deadline': Buffer.from('2026-11-23T10:00:00Z') }),
      deps({
        api: {
          verify: async () => {
            asked++;
            return { partyNameMatch: 'MTCH' };
          },
        },
      }),
    );
    expect(asked).toBe(0);
    const replies = records.filter((r) => r.topic !== config.verifier.dlqTopic);
    expect(replies.map((r) => r.topic)).toEqual([config.verifier.repliesTopic]);
    expect(JSON.parse(String(records[0]?.value))).toMatchObject({
      requestId: 'req-1',
      outcome: 'INVALID_REQUEST',
      error: { code: 'REQUEST_DEADLINE_INVALID', message: expect.stringContaining('vop-deadline') },
    });
  });
});

describe('handleRequest on requests over a limit', () => {
  /** The handler with an upstream that must not be called, and its log lines and metrics. */
  function untouched() {
    const out = logCapture();
    const upstream: unknown[] = [];
    const d = deps({
      api: {
        verify: async (body) => {
          upstream.push(body);
          return { partyNameMatch: 'MTCH' };
        },
      },
      logger: createLogger({ level: 'debug', destination: out.stream }),
    });
    return { d, upstream, out };
  }
  const replyOf = (record: { value: Buffer | null } | undefined) =>
    JSON.parse(record?.value?.toString() ?? '');

  it('sends a request whose key is too long to be its id to the DLQ only, with REQUEST_KEY_TOO_LONG, asking nothing', async () => {
    const { d, upstream, out } = untouched();
    const record = { ...jsonRequest(), key: Buffer.alloc(400_000, 'k') };
    const records = await handleRequest(record, d);
    expect(records).toEqual([
      expect.objectContaining({
        topic: config.verifier.dlqTopic,
        key: record.key,
        headers: expect.objectContaining({ 'error-code': 'REQUEST_KEY_TOO_LONG' }),
      }),
    ]);
    expect(upstream).toEqual([]);
    expect(JSON.stringify(out.lines)).not.toContain('kkkk');
  });

  it('answers a 400 KB correlation id INVALID_REQUEST, echoing the request id instead, asking nothing', async () => {
    const { d, upstream } = untouched();
    const record = jsonRequest({ kafka_correlationId: Buffer.alloc(400_000, 'c') });
    const [reply, ...more] = await handleRequest(record, d);
    expect(more).toEqual([]);
    expect(reply?.topic).toBe(config.verifier.repliesTopic);
    expect(reply?.headers?.kafka_correlationId).toEqual(Buffer.from('req-1'));
    expect(replyOf(reply)).toMatchObject({
      outcome: 'INVALID_REQUEST',
      error: { code: 'REQUEST_CORRELATION_ID_TOO_LONG' },
    });
    expect(batchBytes([reply as never])).toBeLessThan(2_000);
    expect(upstream).toEqual([]);
  });

  it.each([
    ['a 1 MB name', { partyName: 'x'.repeat(1_000_000) }, 'REQUEST_NAME_TOO_LONG'],
    ['a 100-character IBAN', { iban: `DE89${'3'.repeat(96)}` }, 'REQUEST_IBAN_TOO_LONG'],
    ['a 400 KB requestId', { requestId: 'r'.repeat(400_000) }, 'REQUEST_ID_TOO_LONG'],
  ])('answers %s INVALID_REQUEST with its code, asking nothing', async (_what, change, code) => {
    const { d, upstream } = untouched();
    const record = jsonRequest();
    record.value = Buffer.from(
      JSON.stringify({
        requestId: 'req-1',
        iban: IBAN,
        partyName: 'Anna',
        requestedAt: Date.now(),
        ...change,
      }),
    );
    const [reply] = await handleRequest(record, d);
    expect(replyOf(reply)).toMatchObject({ outcome: 'INVALID_REQUEST', error: { code } });
    expect(batchBytes([reply as never])).toBeLessThan(2_000);
    expect(upstream).toEqual([]);
  });

  it('replies on the default topic to a kafka_replyTopic with a space, warning why and counting it', async () => {
    const { d, out } = untouched();
    const looked: string[] = [];
    d.partitionCount = async (topic) => {
      looked.push(topic);
      return 3;
    };
    const [reply] = await handleRequest(
      jsonRequest({ kafka_replyTopic: Buffer.from('vop.verification.replies.x y') }),
      d,
    );
    expect(reply?.topic).toBe(config.verifier.repliesTopic);
    expect(replyOf(reply)).toMatchObject({ outcome: 'COMPLETED' });
    expect(looked).toEqual([]);
    expect((await d.metrics.refusedReplyTopics.get()).values[0]?.value).toBe(1);
    expect(out.lines.filter((l) => String(l.msg).startsWith('kafka_replyTopic'))).toEqual([
      expect.objectContaining({
        msg: 'kafka_replyTopic refused (not a legal Kafka topic name); replying on the default topic',
        refused: 'vop.verification.replies.x y',
        reason: 'not a legal Kafka topic name',
      }),
    ]);
  });
});
