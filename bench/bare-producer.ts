// The bare kafkajs transactional producer of the connector benchmark, run in a process of its own so
// its kafkajs is exactly the one asked for: stock (what the issue compares against), or with
// fraudlink's fixes to kafkajs's hot path (src/kafka/kafkajs.ts) when BARE_KAFKAJS_FIXES=1. It
// re-sends the connector's own records (read back from BARE_SOURCE_TOPIC: key, Avro value, headers)
// in BARE_TX-record transactions and prints `{"rate": records/s, "cpuMs": ...}` on stdout.
import { randomUUID } from 'node:crypto';
import type * as Kafkajs from 'kafkajs';
import { installCodecs } from '../src/kafka/codecs.ts';
import { bareKafka, type KafkajsModule } from './bare-client.ts';
import { countEnv, requiredEnv } from './env.ts';

/**
 * The bare producer the benchmarks compare against: kafkajs defaults except what transactions need,
 * the #304 retry fix and the Java client's partitioner. On fraudlink's kafkajs it keeps Kafka's
 * transaction protocol v1, as the connector does (src/connector/kafka-session.ts).
 */
export async function bareTransactionalProducer(
  kafkajs: Pick<KafkajsModule, 'Partitioners'>,
  kafka: Kafkajs.Kafka,
): Promise<Kafkajs.Producer> {
  const transactionalId = `bench-bare-${randomUUID()}`;
  if (process.env.BARE_KAFKAJS_FIXES === '1') {
    const { keepTransactionProtocolV1 } = await import('../src/kafka/transaction-v2.ts');
    keepTransactionProtocolV1(transactionalId);
  }
  const producer = kafka.producer({
    transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { initialRetryTime: 20 },
    createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  return producer;
}

/**
 * The connector's own records, read back from its topic: "the same records", in the connector's
 * order across partitions. A fetch hands each partition's records over in runs (up to a whole
 * partition when the topic is compressed), so the partitions are interleaved again, round robin,
 * as the connector's transactions spread over them: taken in fetch order, a 5,000-record
 * transaction fell on one or two partitions (one of ~1.4 MB on a compressed topic, which the
 * broker refuses).
 */
async function recordsOf(kafka: Kafkajs.Kafka, topic: string, n: number): Promise<Kafkajs.Message[]> {
  const consumer = kafka.consumer({ groupId: `bench-read-${randomUUID()}`, maxBytes: 16 * 1024 * 1024 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const byPartition = new Map<number, Kafkajs.Message[]>();
  let count = 0;
  await new Promise<void>((resolve, reject) => {
    consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
    void consumer.run({
      eachBatch: async ({ batch }) => {
        const list = byPartition.get(batch.partition) ?? [];
        byPartition.set(batch.partition, list);
        for (const m of batch.messages) {
          if (m.value) list.push({ key: m.key, value: m.value, headers: m.headers });
        }
        count += batch.messages.length;
        if (count >= n) resolve();
      },
    });
  });
  await consumer.disconnect();
  const lists = [...byPartition.values()];
  const out: Kafkajs.Message[] = [];
  for (let i = 0; out.length < n && lists.some((l) => i < l.length); i++) {
    for (const list of lists) {
      const m = list[i];
      if (m) out.push(m);
    }
  }
  return out.slice(0, n);
}

async function main(): Promise<void> {
  const { kafkajs, kafka } = await bareKafka();
  // The connector may have written its topic compressed (KAFKA_COMPRESSION), which stock kafkajs
  // cannot read: its codec table gets fraudlink's codecs, nothing else. The producer measured sends
  // uncompressed either way.
  installCodecs(kafkajs);
  const rows = countEnv('BARE_ROWS');
  const tx = countEnv('BARE_TX');
  const messages = await recordsOf(kafka, requiredEnv('BARE_SOURCE_TOPIC'), rows);
  const admin = kafka.admin();
  await admin.connect();
  const topic = `bench.bare.${randomUUID().slice(0, 8)}`;
  await admin.createTopics({ topics: [{ topic, numPartitions: 6, replicationFactor: 1 }] });
  const producer = await bareTransactionalProducer(kafkajs, kafka);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let sent = 0; sent < rows; sent += tx) {
    const transaction = await producer.transaction();
    await transaction.send({ topic, messages: messages.slice(sent, sent + tx), acks: -1 });
    await transaction.commit();
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await producer.disconnect();
  await admin.deleteTopics({ topics: [topic] }).catch(() => {});
  await admin.disconnect();
  process.stdout.write(
    `${JSON.stringify({ rate: rows / seconds, cpuMs: (used.user + used.system) / 1000 })}\n`,
  );
}

if (import.meta.main) await main();
