import { describe, expect, it, vi } from 'vitest';
import { KafkaError } from '../../src/errors.ts';
import type { OutgoingRecord } from '../../src/kafka/index.ts';
import { createVerificationClient } from '../../src/verifier/client.ts';

// The requester client on a stand-in Kafka client and registry; test/verifier/verifier.int.test.ts
// runs it against a real broker, registry and verifier.
const kafka = vi.hoisted(() => ({
  /** What the reply consumer's start() rejects with; undefined: it starts. */
  startFailure: undefined as Error | undefined,
  consumerClosed: 0,
  /** The records the client's producer sent. */
  sent: [] as OutgoingRecord[],
}));
vi.mock('../../src/kafka/index.ts', () => ({
  createSchemaRegistry: () => ({ encoder: async () => ({ encode: () => Buffer.alloc(0) }) }),
  createKafkaClient: () => ({
    groupConsumer: () => ({
      start: async () => {
        if (kafka.startFailure) throw kafka.startFailure;
      },
      close: async () => {
        kafka.consumerClosed++;
      },
    }),
    producer: async () => ({
      send: async (records: OutgoingRecord[]) => {
        kafka.sent.push(...records);
      },
      close: async () => {},
    }),
  }),
}));

const config = {
  kafka: { brokers: ['localhost:9092'], clientId: 'test', ssl: false },
  registry: { url: 'http://localhost:8081' },
} as Parameters<typeof createVerificationClient>[0];

describe('createVerificationClient', () => {
  it('closes its reply consumer when the consumer fails to start, so that the process of its caller can exit', async () => {
    kafka.startFailure = new KafkaError('start consumer: This server does not host this topic-partition');
    kafka.consumerClosed = 0;
    await expect(createVerificationClient(config)).rejects.toBe(kafka.startFailure);
    expect(kafka.consumerClosed).toBe(1);
  });

  it('sends a vop-deadline a quarter of the timeout (at most 1 s) before the timeout', async () => {
    kafka.startFailure = undefined;
    kafka.sent = [];
    const client = await createVerificationClient({ ...config, format: 'json' });
    const calls = [200, 5000, 20_000].map((timeoutMs) =>
      client.verify({ iban: 'DE89370400440532013000', partyName: 'Anna' }, { timeoutMs }),
    );
    // Each settles once its request is sent: rejected, as close() ends the wait for its reply.
    const settled = Promise.allSettled(calls);
    await client.close();
    await settled;
    const dueAfter = kafka.sent.map((r) => {
      const { requestedAt } = JSON.parse(r.value?.toString() ?? '') as { requestedAt: number };
      return Number(r.headers?.['vop-deadline']) - requestedAt;
    });
    expect(dueAfter).toEqual([150, 4000, 19_000]);
  });
});
