import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import type { GroupConsumerOptions, KafkaClient } from '../../src/kafka/index.ts';
import { silentLogger } from '../../src/logger.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';
import { createVerifier } from '../../src/verifier/verifier.ts';

/** A verifier on a stand-in Kafka client that hands the test its consumer's callbacks. */
async function startedVerifier() {
  let consumerOptions: GroupConsumerOptions | undefined;
  const kafka = {
    transactionalProducer: async () => ({
      transaction: async () => {},
      begin: async () => {
        throw new Error('not used');
      },
      close: async () => {},
    }),
    groupConsumer(options: GroupConsumerOptions) {
      consumerOptions = options;
      return { start: async () => {}, pause() {}, resume() {}, close: async () => {} };
    },
  } as unknown as KafkaClient;
  const config = loadVerifierConfig({
    KAFKA_BROKERS: 'localhost:9092',
    SCHEMA_REGISTRY_URL: 'http://localhost:8081',
    API_BASE_URL: 'http://localhost:1',
    API_KEY: 'key',
  });
  const verifier = createVerifier({
    kafka,
    transactionalId: 'fraudlink-verifier-test',
    config: config.verifier,
    api: { verify: async () => Promise.reject(new Error('not used')) },
    registry: {} as never,
    replyEncoder: async () => Promise.reject(new Error('not used')),
    partitionCount: async () => 3,
    metrics: createVerifierMetrics(new Registry()),
    logger: silentLogger(),
  });
  await verifier.start();
  if (!consumerOptions) throw new Error('the verifier made no consumer');
  const consumer = consumerOptions;
  consumer.onAssignment?.([{ topic: config.verifier.requestsTopic, partitions: [0] }]);
  const settled = { value: false };
  verifier.done.then(
    () => (settled.value = true),
    () => (settled.value = true),
  );
  return { verifier, consumer, settled };
}

describe('verifier consumer crashes', () => {
  it('keeps running while kafkajs restarts a crashed consumer, and is not ready until it rejoins', async () => {
    const { verifier, consumer, settled } = await startedVerifier();
    expect(verifier.ready().ready).toBe(true);
    consumer.onCrash?.(new Error('The coordinator is loading'), true);
    await Promise.resolve();
    expect(settled.value).toBe(false);
    expect(verifier.ready()).toEqual({ ready: false, reason: 'joining group' });
    consumer.onAssignment?.([{ topic: 'requests', partitions: [0, 1] }]);
    expect(verifier.ready().ready).toBe(true);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
  });

  it('fails when the consumer crashed for good', async () => {
    const { verifier, consumer } = await startedVerifier();
    const fatal = new Error('not authorized');
    consumer.onCrash?.(fatal, false);
    await expect(verifier.done).rejects.toBe(fatal);
  });
});
