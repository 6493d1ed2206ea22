import { describe, expect, it, onTestFinished } from 'vitest';
import { TopicConfigMismatchError } from '../../src/errors.ts';
import { testClients } from '../helpers/kafka.ts';
import { uniqueName } from '../helpers/stack.ts';

/** An admin client, and names for topics (`topic` the first) it deletes, then closing, when the test ends. */
async function adminFor(...prefixes: string[]) {
  const { kafka } = testClients();
  const admin = await kafka.admin();
  const topics = prefixes.map((prefix) => uniqueName(prefix));
  onTestFinished(async () => {
    await admin.deleteTopics(topics);
    await admin.close();
  });
  return { admin, topics, topic: topics[0] ?? '' };
}

describe('topic provisioning on a real broker', () => {
  it('lets two instances provision the same new topics at the same moment', async () => {
    const { kafka } = testClients();
    const [first, second] = await Promise.all([kafka.admin(), kafka.admin()]);
    const topics = [uniqueName('prov-race'), uniqueName('prov-race')];
    onTestFinished(async () => {
      await first.deleteTopics(topics);
      await Promise.all([first.close(), second.close()]);
    });
    const specs = topics.map((topic) => ({
      topic,
      partitions: 2,
      replicationFactor: -1,
      configs: { 'cleanup.policy': 'compact' },
    }));
    await Promise.all([first.provisionTopics(specs), second.provisionTopics(specs)]);
    for (const topic of topics) expect(await first.topicOffsets(topic)).toHaveLength(2);
  });

  it("counts a topic's partitions from metadata, and 0 for a topic the cluster does not have", async () => {
    const { admin, topic } = await adminFor('prov-count');
    await admin.provisionTopics([{ topic, partitions: 3, replicationFactor: -1, configs: {} }]);
    expect(await admin.partitionCount(topic)).toBe(3);
    expect(await admin.partitionCount(uniqueName('no-such-topic'))).toBe(0);
  });

  it('creates a compacted topic with the asked configs and accepts it again unchanged', async () => {
    const { admin, topic } = await adminFor('prov-compact');
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

  it('sets creation-only configs on a new topic and does not check them on an existing one', async () => {
    const { admin, topics } = await adminFor('prov-sized', 'prov-plain');
    const [sized = '', plain = ''] = topics;
    const spec = { topic: sized, partitions: 1, replicationFactor: -1, configs: {} };
    await admin.provisionTopics([
      { ...spec, createConfigs: { 'max.message.bytes': '5000' } },
      { ...spec, topic: plain },
    ]);
    expect(await admin.maxMessageBytes(sized)).toBe(5000);
    await admin.provisionTopics([{ ...spec, createConfigs: { 'max.message.bytes': '6000' } }]);
    expect(await admin.maxMessageBytes(sized)).toBe(5000);
    // Without a topic setting: the broker's message.max.bytes, 1 MiB + 12 by default.
    expect(await admin.maxMessageBytes(plain)).toBe(1_048_588);
  });

  it('refuses an existing topic whose configs differ, naming each difference', async () => {
    const { admin, topic } = await adminFor('prov-mismatch');
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
