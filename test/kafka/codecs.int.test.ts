import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { type KafkaCompression, loadReplayConfig } from '../../src/config/index.ts';
import { CODECS } from '../../src/kafka/codecs.ts';
import { createKafkaClient, type IncomingRecord, type KafkaClient } from '../../src/kafka/index.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { silentLogger } from '../../src/logger.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

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

/** Counts the calls of one of fraudlink's codecs' `method` during the test. */
function spyOnCodec(codec: keyof typeof CODECS, method: 'compress' | 'decompress') {
  const spy = vi.spyOn(CODECS[codec], method);
  onTestFinished(() => spy.mockRestore());
  return spy;
}

const CODEC_KEYS = { gzip: 'GZIP', snappy: 'Snappy', lz4: 'LZ4', zstd: 'ZSTD' } as const;

describe("Kafka's compression codecs (a real broker)", () => {
  it.each(['gzip', 'snappy', 'lz4', 'zstd'] as const)(
    'reads batches the broker compressed with %s for the topic',
    async (codec) => {
      const { kafka } = testClients();
      const [topic = ''] = await testTopics(kafka, [`codec-${codec}`], 2, { 'compression.type': codec });
      // Not transactional: acknowledged records are readable at once, with no marker to wait for.
      const producer = await kafka.producer();
      onTestFinished(() => producer.close());
      await producer.send(records(topic));
      const decompressed = spyOnCodec(CODEC_KEYS[codec], 'decompress');

      expect(seen(await readAll(kafka, topic))).toEqual(expected(topic));
      // The broker did recompress: the batches read passed the codec.
      expect(decompressed).toHaveBeenCalled();
    },
  );

  it.each([
    ['gzip', CompressionTypes.GZIP],
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
      await producer.send({
        topic,
        compression: type,
        messages: records(topic).map(({ key, value, headers }) => ({ key, value, headers })),
      });

      expect(seen(await readAll(kafka, topic))).toEqual(expected(topic));
    },
  );

  it.each(['gzip', 'snappy', 'lz4', 'zstd'] as const)(
    "compresses what this layer's producers send with KAFKA_COMPRESSION=%s, in transactions and out",
    async (compression: Exclude<KafkaCompression, 'none'>) => {
      const config = loadReplayConfig({ ...stackEnv(), KAFKA_COMPRESSION: compression });
      const kafka = createKafkaClient({ config: config.kafka, logger: silentLogger() });
      const [plain = '', transactional = ''] = await testTopics(kafka, ['codec-plain', 'codec-tx'], 2, {
        'compression.type': 'producer',
      });
      const compressed = spyOnCodec(CODEC_KEYS[compression], 'compress');
      const producer = await kafka.producer();
      onTestFinished(() => producer.close());
      await producer.send(records(plain));
      const txProducer = await kafka.transactionalProducer({ transactionalId: uniqueName('codec') });
      onTestFinished(() => txProducer.close());
      await txProducer.transaction(records(transactional));
      // One batch per partition and send: two sends over two partitions.
      expect(compressed.mock.calls.length).toBeGreaterThanOrEqual(4);
      const decompressed = spyOnCodec(CODEC_KEYS[compression], 'decompress');

      expect(seen(await readAll(kafka, plain))).toEqual(expected(plain));
      expect(decompressed).toHaveBeenCalled();
    },
  );
});

describe("a fetch response's decompression budget (a real broker)", () => {
  it("leaves the compressed batches that would pass a fetch's maxBytes uncompressed for the next fetch, and reads every record", async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['codec-budget']);
    const brokers = stackEnv().KAFKA_BROKERS.split(',');
    const client = new kafkajs.Kafka({ brokers, logLevel: kafkajs.logLevel.NOTHING });
    const producer = client.producer();
    await producer.connect();
    onTestFinished(() => producer.disconnect());
    // Six batches of 400 KB each, a few hundred bytes compressed: one fetch holds them all.
    const value = (i: number) => Buffer.alloc(400 * 1024, String(i));
    for (let i = 0; i < 6; i++) {
      await producer.send({
        topic,
        compression: CompressionTypes.ZSTD,
        messages: [{ key: `${i}`, value: value(i) }],
      });
    }

    // The fetch's maxBytes (1 MiB here, 64 MiB in consumer.ts and read-topic.ts) is its budget.
    const consumer = client.consumer({ groupId: uniqueName('codec-budget'), maxBytes: 1024 * 1024 });
    onTestFinished(() => consumer.disconnect());
    const batches: string[][] = [];
    const all = Promise.withResolvers<void>();
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        batches.push(
          batch.messages.map((m) =>
            m.value?.equals(value(Number(m.key))) ? `${m.key}` : `${m.key} (wrong value)`,
          ),
        );
        if (batches.flat().length === 6) all.resolve();
      },
    });
    await all.promise;
    // Two batches (800 KB) a fetch: a third would pass 1 MiB.
    expect(batches).toEqual([
      ['0', '1'],
      ['2', '3'],
      ['4', '5'],
    ]);
  });
});
