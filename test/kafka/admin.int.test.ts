import { describe, expect, it, onTestFinished } from 'vitest';
import { TopicConfigMismatchError } from '../../src/errors.ts';
import { testClients } from '../helpers/kafka.ts';
import { uniqueName } from '../helpers/stack.ts';

describe('topic provisioning on a real broker', () => {
  it('creates a compacted topic with the asked configs and accepts it again unchanged', async () => {
    const { kafka } = testClients();
    const admin = await kafka.admin();
    const topic = uniqueName('prov-compact');
    onTestFinished(async () => {
      await admin.deleteTopics([topic]);
      await admin.close();
    });
    const spec = {
      topic,
      partitions: 1,
      replicationFactor: -1,
      configs: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '1000' },
      exactPartitions: true,
    };
    await admin.provisionTopics([spec]);
    await admin.provisionTopics([spec]);
    expect(await admin.topicOffsets(topic)).toEqual([{ partition: 0, low: '0', high: '0' }]);
  });

  it('refuses an existing topic whose configs differ, naming each difference', async () => {
    const { kafka } = testClients();
    const admin = await kafka.admin();
    const topic = uniqueName('prov-mismatch');
    onTestFinished(async () => {
      await admin.deleteTopics([topic]);
      await admin.close();
    });
    await admin.provisionTopics([
      { topic, partitions: 3, replicationFactor: 1, configs: { 'cleanup.policy': 'delete' } },
    ]);
    const attempt = admin.provisionTopics([
      {
        topic,
        partitions: 1,
        replicationFactor: 1,
        configs: { 'cleanup.policy': 'compact' },
        exactPartitions: true,
      },
    ]);
    await expect(attempt).rejects.toBeInstanceOf(TopicConfigMismatchError);
    await expect(attempt).rejects.toThrow(
      /cleanup.policy is delete, expected compact; partitions is 3, expected 1/,
    );
  });
});

describe('reading a topic to its end', () => {
  it('stops at the end even when the topic ends with an aborted transaction and its marker', async () => {
    const { kafka } = testClients();
    const admin = await kafka.admin();
    const topic = uniqueName('read-end');
    onTestFinished(async () => {
      await admin.deleteTopics([topic]);
      await admin.close();
    });
    await admin.provisionTopics([{ topic, partitions: 2, replicationFactor: 1, configs: {} }]);
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('read-end') });
    onTestFinished(() => producer.close());
    await producer.transaction([
      { topic, key: 'a', value: Buffer.from('1'), partition: 0 },
      { topic, key: 'b', value: Buffer.from('2'), partition: 1 },
    ]);
    const aborted = await producer.begin();
    await aborted.send([{ topic, key: 'a', value: Buffer.from('never'), partition: 0 }]);
    await aborted.abort();

    const seen: string[] = [];
    let progress = { read: 0n, total: 0n };
    await kafka.readTopic(
      topic,
      (records) => {
        for (const r of records) seen.push(r.value?.toString() ?? '');
      },
      {
        onProgress: (p) => {
          progress = p;
        },
      },
    );
    expect(seen.sort()).toEqual(['1', '2']);
    expect(progress.read).toBe(progress.total);
  });
});
