// Baseline of the Kafka layer alone: transactional send rate through src/kafka (5,000 and 500 records
// per transaction) beside a bare kafkajs transactional producer sending the same records, and the
// read-to-end rate of those records, on a running broker.
//   KAFKA_BROKERS=127.0.0.1:39092 node bench/kafka-transactions.ts [records] [runs]
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { createKafkaClient, type KafkaClient, type OutgoingRecord } from '../src/kafka/index.ts';
import { silentLogger } from '../src/logger.ts';
import { bareTransactionalProducer } from './bare-producer.ts';

const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:39092').split(',');
const total = Number(process.argv[2] ?? 200_000);
const runs = Number(process.argv[3] ?? 3);

function records(topic: string, count: number): OutgoingRecord[] {
  const value = Buffer.alloc(180, 'x');
  return Array.from({ length: count }, (_, i) => ({
    topic,
    key: `DE${String(i % 50_000).padStart(20, '0')}`,
    value,
    headers: { 'event-type': 'AlertUpserted' },
  }));
}

async function sendRate(kafka: KafkaClient, topic: string, perTransaction: number): Promise<number> {
  // Back-to-back transactions of one producer, as the connector's: on its protocol (v1).
  const producer = await kafka.transactionalProducer({
    transactionalId: `bench-${randomUUID()}`,
    transactionProtocol: 'v1',
  });
  const all = records(topic, total);
  const started = process.hrtime.bigint();
  for (let i = 0; i < all.length; i += perTransaction) {
    await producer.transaction(all.slice(i, i + perTransaction));
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await producer.close();
  return total / seconds;
}

/** kafkajs with its defaults except what transactions need and the #304 retry fix. */
async function bareRate(topic: string, perTransaction: number): Promise<number> {
  const kafka = new kafkajs.Kafka({ brokers, clientId: 'bench-bare', logLevel: kafkajs.logLevel.NOTHING });
  const producer = await bareTransactionalProducer(kafkajs, kafka);
  const all = records(topic, total).map(({ key, value, headers }) => ({ key, value, headers }));
  const started = process.hrtime.bigint();
  for (let i = 0; i < all.length; i += perTransaction) {
    const tx = await producer.transaction();
    await tx.send({ topic, messages: all.slice(i, i + perTransaction), acks: -1 });
    await tx.commit();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await producer.disconnect();
  return total / seconds;
}

async function readRate(kafka: KafkaClient, topic: string): Promise<number> {
  let count = 0;
  const started = process.hrtime.bigint();
  await kafka.readTopic(topic, (batch) => {
    count += batch.length;
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return count / seconds;
}

/** A bare kafkajs consumer counting the same records, until it has them all. */
async function bareReadRate(topic: string): Promise<number> {
  const kafka = new kafkajs.Kafka({ brokers, clientId: 'bench-bare', logLevel: kafkajs.logLevel.NOTHING });
  const consumer = kafka.consumer({
    groupId: `bench-bare-${randomUUID()}`,
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 16 * 1024 * 1024,
  });
  const { promise: done, resolve } = Promise.withResolvers<void>();
  let count = 0;
  const started = process.hrtime.bigint();
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      count += batch.messages.length;
      if (count >= total) resolve();
    },
  });
  await done;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await consumer.disconnect();
  return count / seconds;
}

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const k = (n: number) => `${(n / 1000).toFixed(1)}k`;
  return `${k(s[0]!)} / ${k(s[Math.floor(s.length / 2)]!)} / ${k(s[s.length - 1]!)} records/s (min / median / max)`;
};

const kafka = createKafkaClient({
  config: { brokers, clientId: 'bench-kafka', ssl: false },
  logger: silentLogger(),
});
const admin = await kafka.admin();
for (const perTransaction of [5000, 500]) {
  const send: number[] = [];
  const bare: number[] = [];
  const read: number[] = [];
  const bareRead: number[] = [];
  for (let run = 0; run < runs; run++) {
    const topic = `bench.kafka.${randomUUID().slice(0, 8)}`;
    await admin.provisionTopics([{ topic, partitions: 3, replicationFactor: -1, configs: {} }]);
    const bareTopic = `bench.kafka.bare.${randomUUID().slice(0, 8)}`;
    await admin.provisionTopics([{ topic: bareTopic, partitions: 3, replicationFactor: -1, configs: {} }]);
    send.push(await sendRate(kafka, topic, perTransaction));
    bare.push(await bareRate(bareTopic, perTransaction));
    read.push(await readRate(kafka, topic));
    bareRead.push(await bareReadRate(topic));
    await admin.deleteTopics([topic, bareTopic]);
  }
  console.log(`${total} records, ${perTransaction} per transaction, send: ${summary(send)}`);
  console.log(`  bare kafkajs, same records: ${summary(bare)}`);
  console.log(`  read to end (readTopic): ${summary(read)}`);
  console.log(`  bare kafkajs consumer, same records: ${summary(bareRead)}`);
}
await admin.close();
