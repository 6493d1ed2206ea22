import { describe, expect, it } from 'vitest';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { testClients, testProducer, testTopics } from '../helpers/kafka.ts';
import { writeBomb } from './unreadable-batches.fixtures.ts';

describe('an unreadable record batch (a real broker)', () => {
  it('is read as one record naming the batch, and the records after it are read', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['unreadable-batch']);
    const producer = await testProducer(kafka);
    await producer.send([{ topic, key: 'before', value: Buffer.from('1') }]);
    const bomb = await writeBomb(topic);
    await producer.send([
      { topic, key: 'after-1', value: Buffer.from('2') },
      { topic, key: 'after-2', value: Buffer.from('3') },
    ]);

    const got: IncomingRecord[] = [];
    await kafka.readTopic(topic, (records) => void got.push(...records), { deliverUnreadableBatches: true });

    expect(got.map((r) => r.key?.toString() ?? null)).toEqual(['before', null, 'after-1', 'after-2']);
    const marker = got[1];
    expect(marker).toMatchObject({ offset: bomb.lastOffset, value: null, headers: {} });
    expect(marker?.unreadableBatch).toMatchObject({
      firstOffset: bomb.firstOffset,
      lastOffset: bomb.lastOffset,
      codec: 'zstd',
      reason: expect.stringMatching(
        /could not decompress a ZSTD record batch .*decompresses to more than 67108864 bytes/,
      ),
    });
    expect(marker?.unreadableBatch?.bytes).toBeGreaterThan(0);
    expect(marker?.unreadableBatch?.data.length).toBe(marker?.unreadableBatch?.bytes);
  });

  it('ends a read that does not take it with an error naming it', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['unreadable-batch-read']);
    const bomb = await writeBomb(topic, { records: 3 });

    await expect(kafka.readTopic(topic, () => {})).rejects.toMatchObject({
      name: 'UnreadableBatchError',
      code: 'DECODE_FAILED',
      topic,
      partition: 0,
      firstOffset: bomb.firstOffset,
      lastOffset: bomb.lastOffset,
      codec: 'zstd',
    });
  });
});
