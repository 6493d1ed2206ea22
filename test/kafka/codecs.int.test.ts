import { describe, expect, it, onTestFinished } from 'vitest';
import type { IncomingRecord, KafkaClient } from '../../src/kafka/index.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { stackEnv } from '../helpers/stack.ts';

const { CompressionTypes } = kafkajs;

/** Records large and alike enough to fill several compressed blocks, each with a header. */
const records = (topic: string) =>
  Array.from({ length: 2000 }, (_, i) => ({
    topic,
    key: `iban-${i}`,
    value: Buffer.from(JSON.stringify({ i, text: `alert ${i} `.repeat(20) })),
    headers: { 'event-type': i % 2 ? 'AlertUpserted' : 'AlertDeactivated' },
  }));

const seen = (list: IncomingRecord[]) =>
  list
    .map((r) => ({
      key: r.key?.toString(),
      value: r.value?.toString(),
      type: r.headers['event-type']?.toString(),
    }))
    .sort((a, b) => Number(a.key?.slice(5)) - Number(b.key?.slice(5)));

const expected = (topic: string) =>
  records(topic).map((r) => ({ key: r.key, value: r.value.toString(), type: r.headers['event-type'] }));

async function readAll(kafka: KafkaClient, topic: string): Promise<IncomingRecord[]> {
  const got: IncomingRecord[] = [];
  await kafka.readTopic(topic, (batch) => void got.push(...batch));
  return got;
}

describe("Kafka's compression codecs (a real broker)", () => {
  it.each(['gzip', 'snappy', 'lz4', 'zstd'])(
    'reads batches the broker compressed with %s for the topic',
    async (codec) => {
      const { kafka } = testClients();
      const [topic = ''] = await testTopics(kafka, [`codec-${codec}`], 2, { 'compression.type': codec });
      // Not transactional: acknowledged records are readable at once, with no marker to wait for.
      const producer = await kafka.producer();
      onTestFinished(() => producer.close());
      await producer.send(records(topic));

      expect(seen(await readAll(kafka, topic))).toEqual(expected(topic));
    },
  );

  it.each([
    ['snappy', CompressionTypes.Snappy],
    ['lz4', CompressionTypes.LZ4],
    ['zstd', CompressionTypes.ZSTD],
  ] as const)(
    'writes %s batches the broker accepts as they are, and reads them back',
    async (_codec, type) => {
      const { kafka } = testClients();
      // The broker decompresses every batch it is sent to check its records, so a batch our codec
      // compressed wrongly is refused here, before it could reach any reader.
      const [topic = ''] = await testTopics(kafka, ['codec-producer'], 2, { 'compression.type': 'producer' });
      const client = new kafkajs.Kafka({ brokers: stackEnv().KAFKA_BROKERS.split(','), logLevel: 0 });
      const producer = client.producer();
      await producer.connect();
      onTestFinished(() => producer.disconnect());
      const sent = records(topic);
      await producer.send({
        topic,
        compression: type,
        messages: sent.map(({ key, value, headers }) => ({ key, value, headers })),
      });

      expect(seen(await readAll(kafka, topic))).toEqual(expected(topic));
    },
  );
});
