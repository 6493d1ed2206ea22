import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import type { OutgoingRecord } from '../../src/kafka/index.ts';
import { silentLogger } from '../../src/logger.ts';
import type { HandlerDeps } from '../../src/verifier/handle.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';
import { RefusedReplyTopics, transactionAvoidingRefusedTopics } from '../../src/verifier/refused-topics.ts';

describe('RefusedReplyTopics', () => {
  it('holds a refused topic for ttlMs, then lets it be tried again', () => {
    let clock = 1_000;
    const refused = new RefusedReplyTopics(60_000, () => clock);
    expect(refused.has('replies.team-a')).toBe(false);
    refused.refuse('replies.team-a');
    clock += 59_999;
    expect(refused.has('replies.team-a')).toBe(true);
    expect(refused.has('replies.team-b')).toBe(false);
    clock += 1;
    expect(refused.has('replies.team-a')).toBe(false);
    // Refused again: held again from then.
    refused.refuse('replies.team-a');
    expect(refused.has('replies.team-a')).toBe(true);
  });

  it("holds a topic whose subject the registry refused apart from the broker's refusals, as long", () => {
    let clock = 1_000;
    const refused = new RefusedReplyTopics(60_000, () => clock);
    refused.refuseSchema('replies.team-a');
    expect(refused.schemaRefused('replies.team-a')).toBe(true);
    // Its JSON replies need no schema: the broker has not refused the topic.
    expect(refused.has('replies.team-a')).toBe(false);
    clock += 60_000;
    expect(refused.schemaRefused('replies.team-a')).toBe(false);
  });

  it('keeps at most max topics in each list, the least recently refused dropped first', () => {
    const refused = new RefusedReplyTopics(60_000, () => 0, 2);
    for (const topic of ['t1', 't2', 't3']) {
      refused.refuse(topic);
      refused.refuseBatches(topic);
      refused.refuseSchema(topic);
    }
    expect(['t1', 't2', 't3'].map((t) => refused.has(t))).toEqual([false, true, true]);
    expect(['t1', 't2', 't3'].map((t) => refused.batchesRefused(t))).toEqual([false, true, true]);
    expect(['t1', 't2', 't3'].map((t) => refused.schemaRefused(t))).toEqual([false, true, true]);
  });
});

describe('transactionAvoidingRefusedTopics', () => {
  const config = loadVerifierConfig({
    KAFKA_BROKERS: 'localhost:9092',
    SCHEMA_REGISTRY_URL: 'http://localhost:8081',
    API_BASE_URL: 'http://localhost:1',
    API_KEY: 'key',
  });
  const deps = {
    config: config.verifier,
    metrics: createVerifierMetrics(new Registry()),
    logger: silentLogger(),
  } as unknown as HandlerDeps;
  const reply = (topic: string): OutgoingRecord => ({
    topic,
    key: 'r-1',
    value: Buffer.from('{}'),
    headers: { 'content-type': 'application/json' },
  });
  /** A send the broker refused because of `topic` (its metadata: deleted), whatever the records. */
  const refusedBy = (topic: string) =>
    Object.assign(new Error('This server does not host this topic-partition'), {
      topicErrors: [{ topic, partition: -1, type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: true }],
    });

  it('redoes a transaction on a new producer once when a topic none of its records go to refuses it (a deleted topic the producer wrote to before)', async () => {
    const sent: string[][] = [];
    let renewed = 0;
    const refused = new RefusedReplyTopics(60_000);
    const done = await transactionAvoidingRefusedTopics(
      [reply(config.verifier.repliesTopic)],
      refused,
      deps,
      {
        async transaction(records) {
          sent.push(records.map((r) => r.topic));
          if (renewed === 0) throw refusedBy('replies.deleted');
        },
        async renewProducer() {
          renewed++;
        },
        dropped: () => false,
      },
    );
    expect(done).toBe(true);
    expect(renewed).toBe(1);
    expect(sent).toEqual([[config.verifier.repliesTopic], [config.verifier.repliesTopic]]);
    expect(refused.has('replies.deleted')).toBe(true);
  });

  it("moves a custom topic's replies when the cluster cannot serve that topic through all the producer's retries, and throws when its own topics fail too", async () => {
    const underReplicated = (...topics: string[]) =>
      Object.assign(
        new Error('Messages are written to the log, but to fewer in-sync replicas than required'),
        {
          topicErrors: topics.map((topic) => ({
            topic,
            partition: 0,
            type: 'NOT_ENOUGH_REPLICAS',
            retriable: true,
          })),
        },
      );
    const custom = 'vop.verification.replies.min-isr';
    const sent: string[][] = [];
    const refused = new RefusedReplyTopics(60_000);
    const done = await transactionAvoidingRefusedTopics(
      [reply(custom), { ...reply(config.verifier.repliesTopic), key: 'r-2' }],
      refused,
      deps,
      {
        async transaction(records) {
          sent.push(records.map((r) => r.topic));
          if (records.some((r) => r.topic === custom)) throw underReplicated(custom);
        },
        renewProducer: async () => {},
        dropped: () => false,
      },
    );
    expect(done).toBe(true);
    expect(sent).toEqual([
      [custom, config.verifier.repliesTopic],
      [config.verifier.repliesTopic, config.verifier.repliesTopic],
    ]);
    expect(refused.has(custom)).toBe(true);
    // The whole cluster in trouble: the default topic too. That is an outage, thrown.
    await expect(
      transactionAvoidingRefusedTopics([reply(custom)], new RefusedReplyTopics(60_000), deps, {
        transaction: async () => {
          throw underReplicated(custom, config.verifier.repliesTopic);
        },
        renewProducer: async () => {},
        dropped: () => false,
      }),
    ).rejects.toThrow(/fewer in-sync replicas/);
  });

  it('throws when the new producer is refused too, and at once when the refusing topic is its own', async () => {
    const always = (topic: string) => ({
      transaction: async () => {
        throw refusedBy(topic);
      },
      renewProducer: async () => {},
      dropped: () => false,
    });
    const records = [reply(config.verifier.repliesTopic)];
    await expect(
      transactionAvoidingRefusedTopics(
        records,
        new RefusedReplyTopics(60_000),
        deps,
        always('replies.deleted'),
      ),
    ).rejects.toThrow(/does not host/);
    await expect(
      transactionAvoidingRefusedTopics(
        records,
        new RefusedReplyTopics(60_000),
        deps,
        always(config.verifier.repliesTopic),
      ),
    ).rejects.toThrow(/does not host/);
  });
});
