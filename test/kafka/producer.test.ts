import type { Kafka } from '@fraudlink/kafkajs';
import { describe, expect, it } from 'vitest';
import { createProducer, createTransactionalProducer } from '../../src/kafka/producer.ts';

/** A kafkajs client whose producers record their options and fail to connect. */
function recordingKafka() {
  const options: Record<string, unknown>[] = [];
  const kafka = {
    producer(o: Record<string, unknown>) {
      options.push(o);
      return {
        connect: () => Promise.reject(new Error('no broker here')),
        disconnect: () => Promise.resolve(),
        transaction: () => Promise.reject(new Error('no broker here')),
      };
    },
  } as unknown as Kafka;
  return { kafka, options };
}

describe('producer options', () => {
  it('never lets a producer, plain or transactional, create a topic by writing to it', async () => {
    const { kafka, options } = recordingKafka();
    await expect(createProducer(kafka)).rejects.toThrow(/no broker here/);
    await expect(createTransactionalProducer(kafka, { transactionalId: 'tx-options' })).rejects.toThrow(
      /no broker here/,
    );
    expect(options).toHaveLength(2);
    for (const o of options) expect(o).toMatchObject({ allowAutoTopicCreation: false, idempotent: true });
    expect(options[1]).toMatchObject({ transactionalId: 'tx-options' });
  });
});
