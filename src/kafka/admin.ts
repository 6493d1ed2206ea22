import type { Admin, ITopicConfig } from '@fraudlink/kafkajs';
import { KafkaError, TopicConfigMismatchError } from '../errors.ts';
import { retry } from '../retry.ts';
import { toKafkaError } from './errors.ts';
import kafkajs from './kafkajs.ts';
import type { KafkaAdmin, TopicSpec } from './types.ts';

// kafkajs is CommonJS: its values come through the default export.
const { ConfigResourceTypes } = kafkajs;

export function wrapAdmin(admin: Admin): KafkaAdmin {
  // Ends the waits below at close(): a call a stop request left behind (start-up racing its steps
  // against the signal) would otherwise go on retrying, and kafkajs would connect again for it.
  const closing = new AbortController();
  const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw toKafkaError(err, what);
    }
  };

  /** The topic's partition count from metadata; null when the cluster has no such topic. */
  const partitionsOf = async (topic: string): Promise<number | null> => {
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      return topics.find((t) => t.name === topic)?.partitions.length ?? null;
    } catch (err) {
      if ((err as { type?: unknown }).type === 'UNKNOWN_TOPIC_OR_PARTITION') return null;
      throw toKafkaError(err, `fetch metadata of ${topic}`);
    }
  };

  /**
   * Fails at once, not retriable, when the cluster has no such topic. kafkajs's fetchTopicOffsets
   * retries UNKNOWN_TOPIC_OR_PARTITION for ~20 s and then reports it as retriable, which the retry
   * in topicOffsets would run ten times more: minutes for a typo. Metadata answers in one round trip.
   */
  const mustExist = async (topic: string): Promise<void> => {
    if ((await partitionsOf(topic)) === null) {
      throw new KafkaError(`topic ${topic} does not exist`, { retriable: false });
    }
  };

  const checkExisting = async (specs: TopicSpec[]): Promise<void> => {
    if (specs.length === 0) return;
    const described = await call('describe topic configs', () =>
      admin.describeConfigs({
        includeSynonyms: false,
        resources: specs.map((s) => ({ type: ConfigResourceTypes.TOPIC, name: s.topic })),
      }),
    );
    const metadata = await call('fetch topic metadata', () =>
      admin.fetchTopicMetadata({ topics: specs.map((s) => s.topic) }),
    );
    for (const spec of specs) {
      const differences: { setting: string; expected: string; actual: string }[] = [];
      const entries = described.resources.find((r) => r.resourceName === spec.topic)?.configEntries ?? [];
      for (const [setting, expected] of Object.entries(spec.configs)) {
        const actual = entries.find((e) => e.configName === setting)?.configValue ?? '(unset)';
        if (actual !== expected) differences.push({ setting, expected, actual });
      }
      const partitions = metadata.topics.find((t) => t.name === spec.topic)?.partitions.length ?? 0;
      if (spec.exactPartitions && partitions !== spec.partitions) {
        differences.push({
          setting: 'partitions',
          expected: String(spec.partitions),
          actual: String(partitions),
        });
      }
      if (differences.length > 0) throw new TopicConfigMismatchError(spec.topic, differences);
    }
  };

  return {
    async describeCluster() {
      const cluster = await call('describe cluster', () => admin.describeCluster());
      return {
        brokers: cluster.brokers.length,
        controller: cluster.controller,
        clusterId: cluster.clusterId,
      };
    },

    async provisionTopics(specs) {
      const existing = new Set(await call('list topics', () => admin.listTopics()));
      const missing = specs.filter((s) => !existing.has(s.topic));
      if (missing.length > 0) {
        const topics: ITopicConfig[] = missing.map((s) => ({
          topic: s.topic,
          numPartitions: s.partitions,
          replicationFactor: s.replicationFactor,
          configEntries: Object.entries({ ...s.createConfigs, ...s.configs }).map(([name, value]) => ({
            name,
            value,
          })),
        }));
        // Another instance may create the same topics at the same moment: kafkajs answers false
        // instead of throwing when every failure is TOPIC_ALREADY_EXISTS, and such a topic is then
        // checked like any other below. replicationFactor -1 (KIP-464) is accepted by the broker
        // through kafkajs's CreateTopics v3 and means default.replication.factor (verified on 4.3.1).
        await call('create topics', () => admin.createTopics({ topics, waitForLeaders: false }));
        // A new topic's metadata reaches the broker a moment after CreateTopics returns, under load
        // later than kafkajs's own wait allows: wait here, bounded, until every partition has a leader.
        await retry(
          async () => {
            const { topics: found } = await admin.fetchTopicMetadata({ topics: missing.map((s) => s.topic) });
            const ready = found.filter(
              (t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0),
            );
            if (ready.length < missing.length) {
              throw new KafkaError(`topics not ready yet: ${missing.map((s) => s.topic).join(', ')}`, {
                retriable: true,
              });
            }
          },
          {
            retries: 40,
            initialDelayMs: 50,
            maxDelayMs: 1000,
            shouldRetry: () => true,
            signal: closing.signal,
          },
        ).catch((err: unknown) => {
          throw toKafkaError(err, 'waiting for new topics');
        });
      }
      await checkExisting(specs);
    },

    async topicOffsets(topic) {
      // Right after a topic is created, metadata can already name a leader that has not yet taken
      // the partition over: ListOffsets answers NOT_LEADER_FOR_PARTITION for a moment (seen in CI on
      // Kafka 4.3.1), and kafkajs gives up on that error at once. Retriable errors are retried here,
      // bounded, so a reader never fails on a topic that is merely new. A missing topic fails at once.
      const offsets = await retry(
        async () => {
          await mustExist(topic);
          return call(`fetch offsets of ${topic}`, () => admin.fetchTopicOffsets(topic));
        },
        { retries: 10, initialDelayMs: 50, maxDelayMs: 1000, signal: closing.signal },
      );
      return offsets.map((o) => ({ partition: o.partition, low: o.low, high: o.high }));
    },

    async partitionCount(topic) {
      const partitions = await retry(() => partitionsOf(topic), {
        retries: 5,
        initialDelayMs: 50,
        maxDelayMs: 1000,
        signal: closing.signal,
      });
      return partitions ?? 0;
    },

    async groupOffsets(groupId, topic) {
      const result = await call(`fetch offsets of group ${groupId}`, () =>
        admin.fetchOffsets({ groupId, topics: [topic] }),
      );
      return (result[0]?.partitions ?? []).map((p) => ({ partition: p.partition, offset: p.offset }));
    },

    async describeGroup(groupId) {
      const { groups } = await call(`describe group ${groupId}`, () => admin.describeGroups([groupId]));
      const group = groups.find((g) => g.groupId === groupId);
      return { state: group?.state ?? 'Dead', members: (group?.members ?? []).map((m) => m.memberId) };
    },

    async maxMessageBytes(topic) {
      const described = await call(`describe configs of ${topic}`, () =>
        admin.describeConfigs({
          includeSynonyms: false,
          resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['max.message.bytes'] }],
        }),
      );
      const value = described.resources[0]?.configEntries.find(
        (e) => e.configName === 'max.message.bytes',
      )?.configValue;
      const bytes = Number(value);
      if (!Number.isSafeInteger(bytes) || bytes <= 0) {
        throw new KafkaError(`topic ${topic} has no readable max.message.bytes (${String(value)})`, {
          retriable: false,
        });
      }
      return bytes;
    },

    async deleteTopics(topics) {
      await call('delete topics', () => admin.deleteTopics({ topics }));
    },

    async close() {
      closing.abort();
      await admin.disconnect();
    },
  };
}
