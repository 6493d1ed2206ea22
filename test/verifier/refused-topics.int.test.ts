import { Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import type { KafkaClient, OutgoingRecord, TransactionalProducer } from '../../src/kafka/index.ts';
import { createLogger } from '../../src/logger.ts';
import type { HandlerDeps } from '../../src/verifier/handle.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';
import { RefusedReplyTopics, transactionAvoidingRefusedTopics } from '../../src/verifier/refused-topics.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { logCapture } from '../helpers/log.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

/** A JSON reply of about 300 bytes as a record batch of its own (`pad` more). */
const reply = (topic: string, id: string, pad = 200): OutgoingRecord => ({
  topic,
  key: id,
  value: Buffer.from(JSON.stringify({ requestId: id, outcome: 'COMPLETED', pad: 'x'.repeat(pad) })),
  headers: { 'content-type': 'application/json' },
});

/** The keys of every committed record of `topic` (read_committed, to its end offsets). */
async function keysOn(kafka: KafkaClient, topic: string): Promise<(string | undefined)[]> {
  const keys: (string | undefined)[] = [];
  await kafka.readTopic(topic, (records) => void keys.push(...records.map((r) => r.key?.toString())));
  return keys;
}

describe('reply topics the broker refuses, on a real broker', () => {
  it('sends the replies to a topic that takes each alone but not a batch of them one per batch, and moves only those of a topic that refuses one alone', async () => {
    const { kafka } = testClients();
    const [replies = '', dlq = ''] = await testTopics(kafka, ['replies', 'dlq']);
    const [tight = ''] = await testTopics(kafka, ['replies.tight'], 1, { 'max.message.bytes': '2000' });
    const config = loadVerifierConfig({
      ...stackEnv(),
      API_BASE_URL: 'http://localhost:1',
      API_KEY: 'key',
      VERIFY_REQUESTS_TOPIC: uniqueName('requests'),
      VERIFY_REPLIES_TOPIC: replies,
      VERIFY_DLQ_TOPIC: dlq,
    });
    const log = logCapture();
    const metrics = createVerifierMetrics(new Registry());
    const deps: HandlerDeps = {
      config: config.verifier,
      api: {} as never,
      metrics,
      logger: createLogger({ level: 'warn', destination: log.stream }),
      registry: {} as never,
      replyEncoder: () => Promise.reject(new Error('JSON replies only')),
      partitionCount: async () => 1,
      dlqMaxBytes: 1_048_588,
    };
    const transactionalId = uniqueName('tx');
    let producer: TransactionalProducer = await kafka.transactionalProducer({ transactionalId });
    onTestFinished(() => producer.close());
    const refused = new RefusedReplyTopics(300_000);
    const commit = (records: OutgoingRecord[]) =>
      transactionAvoidingRefusedTopics(records, refused, deps, {
        transaction: (sent, unbatchedTopics) => producer.transaction(sent, { unbatchedTopics }),
        async renewProducer() {
          await producer.close();
          producer = await kafka.transactionalProducer({ transactionalId });
        },
        dropped: () => false,
      });

    // Twelve replies of one group commit, ~3.6 kB as one record batch: more than the topic takes.
    const twelve = Array.from({ length: 12 }, (_, i) => reply(tight, `r-${i}`));
    expect(await commit(twelve)).toBe(true);
    expect(refused.has(tight)).toBe(false);
    expect(await keysOn(kafka, tight)).toEqual(twelve.map((r) => r.key));
    expect(log.lines.map((l) => l.msg)).toEqual([
      'the broker refuses a record batch of several replies to kafka_replyTopic (its max.message.bytes): ' +
        'the transaction is redone with each of its replies in a batch of its own',
    ]);
    // Remembered: the next commit sends them one per batch at once, without a failed transaction.
    expect(await commit([reply(tight, 'r-12'), reply(tight, 'r-13')])).toBe(true);
    expect(log.lines).toHaveLength(1);

    // A reply the topic refuses even alone: this commit's replies to it go to the default topic.
    expect(await commit([reply(tight, 'big', 3000), reply(tight, 'r-14')])).toBe(true);
    expect(refused.has(tight)).toBe(true);
    expect((await keysOn(kafka, replies)).sort()).toEqual(['big', 'r-14']);
    expect(await keysOn(kafka, tight)).toHaveLength(14);
    expect((await metrics.refusedReplyTopics.get()).values[0]?.value).toBe(2);
  });
});
