import { describe, expect, it, onTestFinished } from 'vitest';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { uniqueName } from '../helpers/stack.ts';

describe('group consumer on a real broker', () => {
  it('does not leave start() hanging when closed before it joined its group', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['consumer-close']);
    const consumer = kafka.groupConsumer({
      groupId: uniqueName('g'),
      topics: [topic],
      eachBatch: async () => {},
    });
    const starting = consumer.start();
    await consumer.close();
    await expect(starting).rejects.toThrow('closed before it joined its group');
  });

  it('resumes delivery to a paused partition', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['consumer-pause']);
    const seen: IncomingRecord[] = [];
    const { promise: delivered, resolve } = Promise.withResolvers<void>();
    const consumer = kafka.groupConsumer({
      groupId: uniqueName('g'),
      topics: [topic],
      eachBatch: async (batch) => {
        seen.push(...batch.records);
        resolve();
      },
    });
    onTestFinished(() => consumer.close());
    await consumer.start();
    consumer.pause([{ topic }]);
    const producer = await kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send([{ topic, key: 'k', value: Buffer.from('v') }]);
    consumer.resume([{ topic, partitions: [0] }]);
    await delivered;
    expect(seen.map((r) => r.value?.toString())).toEqual(['v']);
  });
});
