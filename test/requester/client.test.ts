import { describe, expect, it, vi } from 'vitest';
import {
  AbortedError,
  DecodeError,
  InvalidInputError,
  KafkaError,
  SchemaRegistryError,
  TimeoutError,
} from '../../src/errors.ts';
import type { GroupConsumerOptions, IncomingRecord, OutgoingRecord } from '../../src/kafka/index.ts';
import { createVerificationClient } from '../../src/requester/client.ts';

// The requester client on a stand-in Kafka client and registry; test/verifier/verifier.int.test.ts
// runs it against a real broker, registry and verifier.
const kafka = vi.hoisted(() => ({
  /** What the reply consumer's start() rejects with; undefined: it starts. */
  startFailure: undefined as Error | undefined,
  /** What the reply consumer's start() waits for first: its join (or its close). */
  startGate: Promise.resolve() as Promise<void>,
  consumerClosed: 0,
  /** The records the client's producer sent. */
  sent: [] as OutgoingRecord[],
  /** The options of the last reply consumer made: its eachBatch hands it replies. */
  consumer: undefined as GroupConsumerOptions | undefined,
  /** What the registry's decode() does with an Avro reply. */
  decode: (async () => ({ value: {} })) as (
    value: Buffer | null,
  ) => Promise<{ value: Record<string, unknown> }>,
}));
vi.mock('../../src/kafka/index.ts', () => ({
  createSchemaRegistry: () => ({
    encoder: async () => ({ encode: () => Buffer.alloc(0) }),
    decode: (value: Buffer | null) => kafka.decode(value),
  }),
  createKafkaClient: () => ({
    groupConsumer: (options: GroupConsumerOptions) => {
      kafka.consumer = options;
      // As src/kafka/consumer.ts: close() ends a start still waiting for its group's join.
      const closed = Promise.withResolvers<never>();
      closed.promise.catch(() => {});
      return {
        start: async () => {
          await Promise.race([kafka.startGate, closed.promise]);
          if (kafka.startFailure) throw kafka.startFailure;
        },
        close: async () => {
          kafka.consumerClosed++;
          closed.reject(new AbortedError('consumer closed before it joined its group'));
        },
      };
    },
    producer: async () => ({
      send: async (records: OutgoingRecord[]) => {
        kafka.sent.push(...records);
      },
      close: async () => {},
    }),
  }),
}));

/** Hands the reply consumer one reply to the request `sent`, as the verifier would write it. */
async function reply(sent: OutgoingRecord | undefined, value: Buffer, json: boolean): Promise<void> {
  const headers: Record<string, Buffer> = {
    kafka_correlationId: Buffer.from(String(sent?.headers?.kafka_correlationId)),
  };
  if (json) headers['content-type'] = Buffer.from('application/json');
  const record: IncomingRecord = {
    topic: 'replies',
    partition: 0,
    offset: '0',
    key: null,
    value,
    headers,
    timestamp: Date.now(),
  };
  await kafka.consumer?.eachBatch({
    topic: 'replies',
    partition: 0,
    records: [record],
    isRunning: () => true,
    isStale: () => false,
    heartbeat: async () => {},
  });
}

/** How `promise` settled within a few milliseconds: its value, its error, or 'pending'. */
async function settledSoon<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown } | 'pending'> {
  const pending = new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 50));
  return Promise.race([
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    pending,
  ]);
}

const request = { iban: 'DE89370400440532013000', partyName: 'Anna' };

const config = {
  kafka: { brokers: ['localhost:9092'], clientId: 'test', ssl: false },
  registry: { url: 'http://localhost:8081' },
} as Parameters<typeof createVerificationClient>[0];

/** The fake Kafka as a new test finds it: starts fine, nothing sent. */
function resetKafka(): void {
  kafka.startFailure = undefined;
  kafka.startGate = Promise.resolve();
  kafka.sent = [];
}

/** A JSON client on a fresh fake Kafka, with one verify() sent and waiting for its reply. */
async function oneRequestSent() {
  resetKafka();
  const client = createVerificationClient({ ...config, format: 'json' });
  const verifying = client.verify(request, { timeoutMs: 60_000 });
  await vi.waitFor(() => expect(kafka.sent).toHaveLength(1));
  return { client, verifying };
}

describe('createVerificationClient', () => {
  it('closes its reply consumer when the consumer fails to start, so that the process of its caller can exit', async () => {
    resetKafka();
    kafka.startFailure = new KafkaError('start consumer: This server does not host this topic-partition');
    kafka.consumerClosed = 0;
    const client = createVerificationClient(config);
    await expect(client.ready()).rejects.toBe(kafka.startFailure);
    expect(kafka.consumerClosed).toBe(1);
    // Every verify() rejects with the start's error, sending nothing.
    await expect(client.verify(request)).rejects.toBe(kafka.startFailure);
    expect(kafka.sent).toEqual([]);
    await client.close();
  });

  it('returns the client at once, as the README writes it (createVerificationClient(config).verify(...)), and sends once started', async () => {
    resetKafka();
    const start = Promise.withResolvers<void>();
    kafka.startGate = start.promise;
    const verifying = createVerificationClient({ ...config, format: 'json' }).verify(request, {
      timeoutMs: 60_000,
    });
    expect(await settledSoon(verifying)).toBe('pending');
    expect(kafka.sent).toEqual([]);
    start.resolve();
    await vi.waitFor(() => expect(kafka.sent).toHaveLength(1));
    const answer = { requestId: String(kafka.sent[0]?.key), outcome: 'EXPIRED' };
    await reply(kafka.sent[0], Buffer.from(JSON.stringify(answer)), true);
    expect(await settledSoon(verifying)).toEqual({ value: answer });
  });

  it("ignores a reply with the request's correlation id but another requestId, counts it, and resolves with the real one", async () => {
    const { client, verifying } = await oneRequestSent();
    const requestId = String(kafka.sent[0]?.key);
    const forged = { requestId: 'someone-else', outcome: 'COMPLETED', nameMatch: 'MTCH' };
    await reply(kafka.sent[0], Buffer.from(JSON.stringify(forged)), true);
    expect(await settledSoon(verifying)).toBe('pending');
    expect(client.stats).toMatchObject({ mismatched: 1, pending: 1 });
    const real = { requestId, outcome: 'COMPLETED', nameMatch: 'NMTC' };
    await reply(kafka.sent[0], Buffer.from(JSON.stringify(real)), true);
    expect(await settledSoon(verifying)).toEqual({ value: real });
    expect(client.stats).toMatchObject({ mismatched: 1, pending: 0 });
    await client.close();
  });

  it("counts a verify() call's timeout from the call, the client's start-up included", async () => {
    resetKafka();
    const start = Promise.withResolvers<void>();
    kafka.startGate = start.promise;
    const client = createVerificationClient({ ...config, format: 'json' });
    const calledAt = Date.now();
    const verifying = client.verify(request, { timeoutMs: 100 });
    await expect(verifying).rejects.toBeInstanceOf(TimeoutError);
    start.resolve();
    await client.ready();
    // Timed out while starting: never sent.
    expect(kafka.sent).toEqual([]);
    const late = client.verify(request, { timeoutMs: 8000 });
    await vi.waitFor(() => expect(kafka.sent).toHaveLength(1));
    expect(Number(kafka.sent[0]?.headers?.['vop-deadline'])).toBeGreaterThanOrEqual(calledAt + 6000);
    await client.close();
    await expect(late).rejects.toBeInstanceOf(AbortedError);
  });

  it('sends a vop-deadline a quarter of the timeout (at most 1 s) before the timeout', async () => {
    resetKafka();
    const client = createVerificationClient({ ...config, format: 'json' });
    await client.ready();
    const calls = [200, 5000, 20_000].map((timeoutMs) =>
      client.verify({ iban: 'DE89370400440532013000', partyName: 'Anna' }, { timeoutMs }),
    );
    // Each settles once its request is sent: rejected, as close() ends the wait for its reply.
    const settled = Promise.allSettled(calls);
    await vi.waitFor(() => expect(kafka.sent).toHaveLength(3));
    await client.close();
    await settled;
    const dueAfter = kafka.sent.map((r) => {
      const { requestedAt } = JSON.parse(r.value?.toString() ?? '') as { requestedAt: number };
      return Number(r.headers?.['vop-deadline']) - requestedAt;
    });
    expect(dueAfter).toEqual([150, 4000, 19_000]);
  });

  it('rejects the waiting verify() at once with a DecodeError when its reply is not valid JSON, and counts it', async () => {
    const { client, verifying } = await oneRequestSent();
    await reply(kafka.sent[0], Buffer.from('{"requestId": "r", "outc'), true);
    const settled = await settledSoon(verifying);
    expect(settled).toEqual({ error: expect.any(DecodeError) });
    expect(String((settled as { error: unknown }).error)).toMatch(/reply to request .* is not valid JSON/);
    expect(client.stats).toMatchObject({ unreadable: 1, pending: 0 });
    await client.close();
  });

  it('rejects the waiting verify() with a DecodeError when its JSON reply is not a VerificationResult', async () => {
    const { client, verifying } = await oneRequestSent();
    await reply(kafka.sent[0], Buffer.from('null'), true);
    expect(await settledSoon(verifying)).toEqual({ error: expect.any(DecodeError) });
    await client.close();
  });

  it("rejects the waiting verify() at once with the registry's error when its Avro reply cannot be decoded", async () => {
    resetKafka();
    const unavailable = new SchemaRegistryError('reading schema id 7 failed: connect ECONNREFUSED', {
      retriable: true,
    });
    kafka.decode = async () => {
      throw unavailable;
    };
    const client = createVerificationClient(config);
    const verifying = client.verify(request, { timeoutMs: 60_000 });
    await vi.waitFor(() => expect(kafka.sent).toHaveLength(1));
    await reply(kafka.sent[0], Buffer.from([0, 0, 0, 0, 7, 1]), false);
    expect(await settledSoon(verifying)).toEqual({ error: unavailable });
    expect(client.stats).toMatchObject({ unreadable: 1, pending: 0 });
    await client.close();
  });

  it('refuses a timeoutMs that setTimeout cannot keep (0, negative, fractional, NaN, Infinity, past 2^31-1) before sending anything', async () => {
    resetKafka();
    const client = createVerificationClient({ ...config, format: 'json' });
    for (const timeoutMs of [
      0,
      -1,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      2 ** 31,
      '100' as unknown as number,
    ]) {
      const refused = client.verify(request, { timeoutMs });
      await expect(refused, String(timeoutMs)).rejects.toBeInstanceOf(InvalidInputError);
      await expect(refused).rejects.toMatchObject({ rule: 'VERIFY_TIMEOUT_MS' });
      await expect(refused).rejects.toThrow(
        /timeoutMs must be a whole number of milliseconds from 1 to 2147483647/,
      );
    }
    expect(kafka.sent).toEqual([]);
    expect(client.stats.pending).toBe(0);
    await client.close();
  });

  it('refuses an iban or partyName that is not a string before sending anything', async () => {
    resetKafka();
    const client = createVerificationClient(config);
    const bad = [
      { iban: 123, partyName: 'Anna' },
      { iban: 'DE89370400440532013000', partyName: null },
      { iban: 'DE89370400440532013000' },
    ] as unknown as { iban: string; partyName: string }[];
    for (const each of bad) {
      const refused = client.verify(each);
      await expect(refused).rejects.toBeInstanceOf(InvalidInputError);
      await expect(refused).rejects.toMatchObject({ rule: 'VERIFY_REQUEST' });
    }
    await expect(client.verify(null as unknown as { iban: string; partyName: string })).rejects.toMatchObject(
      {
        rule: 'VERIFY_REQUEST',
      },
    );
    expect(kafka.sent).toEqual([]);
    await client.close();
  });

  it('fails waiting and later verify() calls with the error of a reply consumer that stopped for good', async () => {
    const { client, verifying } = await oneRequestSent();
    const crash = new KafkaError('consumer fraudlink-requester-x crashed: The group is rebalancing');
    kafka.consumer?.onCrash?.(crash, false);
    expect(await settledSoon(verifying)).toEqual({ error: crash });
    expect(client.stats.pending).toBe(0);
    // No request goes out that no reply could ever answer.
    await expect(client.verify(request)).rejects.toBe(crash);
    expect(kafka.sent).toHaveLength(1);
    await client.close();
  });

  it('close() rejects the waiting verify() with AbortedError, and a verify() after it sends nothing', async () => {
    const { client, verifying } = await oneRequestSent();
    await client.close();
    expect(await settledSoon(verifying)).toEqual({ error: expect.any(AbortedError) });
    await expect(verifying).rejects.toThrow(/client closed before the reply arrived/);
    await expect(client.verify(request)).rejects.toBeInstanceOf(AbortedError);
    expect(kafka.sent).toHaveLength(1);
    expect(client.stats.pending).toBe(0);
  });

  it('close() ends while the reply consumer has not joined its group yet (kafkajs restarting it after retriable crashes), and the start with it', async () => {
    resetKafka();
    kafka.startGate = new Promise(() => {});
    kafka.consumerClosed = 0;
    const client = createVerificationClient({ ...config, format: 'json' });
    const ready = client.ready();
    ready.catch(() => {});
    kafka.consumer?.onCrash?.(
      new KafkaError('consumer crashed: The group coordinator is not available'),
      true,
    );
    const verifying = client.verify(request, { timeoutMs: 60_000 });
    verifying.catch(() => {});
    await client.close();
    expect(kafka.consumerClosed).toBeGreaterThanOrEqual(1);
    await expect(verifying).rejects.toThrow(/client closed before the reply arrived/);
    await expect(ready).rejects.toThrow(/client closed before it was ready/);
    await expect(ready).rejects.toBeInstanceOf(AbortedError);
    expect(kafka.sent).toEqual([]);
  });

  it('goes on waiting through a crash its reply consumer restarts from', async () => {
    const { client, verifying } = await oneRequestSent();
    kafka.consumer?.onCrash?.(new KafkaError('consumer crashed: Connection closed'), true);
    expect(await settledSoon(verifying)).toBe('pending');
    const answer = { requestId: String(kafka.sent[0]?.key), outcome: 'EXPIRED' };
    await reply(kafka.sent[0], Buffer.from(JSON.stringify(answer)), true);
    expect(await settledSoon(verifying)).toEqual({ value: answer });
    await client.close();
  });
});
