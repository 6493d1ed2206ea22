// The bare kafkajs consumer of the replay benchmark, run in a process of its own so its kafkajs is
// exactly the one asked for: stock (what the issue compares against), or with fraudlink's fixes to
// kafkajs's hot path (src/kafka/kafkajs.ts) when BARE_KAFKAJS_FIXES=1. It reads BARE_TOPIC from the
// beginning to BARE_EVENTS records without decoding them, BARE_PASSES times (each pass a fresh
// consumer group), and prints the last pass's `{"rate": records/s, "cpuMs": ...}` on stdout: the
// first pass warms the JIT, as the replay it is compared with runs in a warm process.
import { randomUUID } from 'node:crypto';
import type * as Kafkajs from 'kafkajs';
import { installCodecs } from '../src/kafka/codecs.ts';
import { bareKafka } from './bare-client.ts';
import { countEnv, requiredEnv } from './env.ts';

/** One read of the topic by a bare kafkajs consumer, with the large fetches replay asks for too. */
async function readAll(kafka: Kafkajs.Kafka, topic: string, events: number) {
  const consumer = kafka.consumer({
    groupId: `bench-bare-${randomUUID()}`,
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 16 * 1024 * 1024,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let read = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
    void consumer.run({
      eachBatch: async ({ batch }) => {
        read += batch.messages.length;
        if (read >= events) resolve();
      },
    });
  });
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await consumer.disconnect();
  return { rate: events / seconds, cpuMs: (used.user + used.system) / 1000 };
}

async function main(): Promise<void> {
  const { kafkajs, kafka } = await bareKafka();
  // The topic may be written compressed (KAFKA_COMPRESSION), which stock kafkajs cannot read: its
  // codec table gets fraudlink's codecs, nothing else.
  installCodecs(kafkajs);
  const topic = requiredEnv('BARE_TOPIC');
  const events = countEnv('BARE_EVENTS');
  let result = { rate: 0, cpuMs: 0 };
  for (let pass = countEnv('BARE_PASSES', 2); pass > 0; pass--) {
    result = await readAll(kafka, topic, events);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (import.meta.main) await main();
