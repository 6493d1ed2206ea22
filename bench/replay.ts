// Replay: decoding and applying a topic of 1,000,000 alert events, beside bare kafkajs consumers
// (stock, and with fraudlink's kafkajs fixes) reading the same topic without decoding, in
// alternating rounds of one run.
import { randomUUID } from 'node:crypto';
import type { KafkaCompression } from '../src/config/index.ts';
import { CODEC_IDS } from '../src/kafka/codecs.ts';
import { createSchemaRegistry } from '../src/kafka/index.ts';
// Through src/kafka, as replayAlerts loads it: fraudlink's fixes are in place before any kafkajs module.
import kafkajs from '../src/kafka/kafkajs.ts';
import { replayAlerts } from '../src/replay/index.ts';
import { loadSchema, SchemaNames } from '../src/schemas.ts';
import { benchStack, fmt, median, runBare } from './common.ts';
import { countEnv } from './env.ts';

export async function run(): Promise<void> {
  const events = countEnv('BENCH_EVENTS', 1_000_000);
  const ibans = countEnv('BENCH_IBANS', 50_000);
  const rounds = countEnv('BENCH_ROUNDS', 3);
  const stack = await benchStack();
  const topic = `bench.replay.${randomUUID().slice(0, 8)}`;
  const kafka = new kafkajs.Kafka({
    brokers: [stack.brokers],
    clientId: 'bench-replay',
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 6, replicationFactor: 1 }] });
  const registry = createSchemaRegistry({ url: stack.registryUrl });
  const upserted = await registry.encoder(topic, loadSchema(SchemaNames.AlertUpserted));
  const deactivated = await registry.encoder(topic, loadSchema(SchemaNames.AlertDeactivated));
  // The topic is written with KAFKA_COMPRESSION's codec when set, so that replay reads it as it
  // would read a compressed alerts topic.
  const codec = (process.env.KAFKA_COMPRESSION ?? 'none') as KafkaCompression;
  const compression = CODEC_IDS[codec];
  if (compression === undefined) throw new Error(`KAFKA_COMPRESSION=${codec}: not one of Kafka's codecs`);
  const producer = kafka.producer({ createPartitioner: kafkajs.Partitioners.DefaultPartitioner });
  await producer.connect();
  const fill = performance.now();
  for (let sent = 0; sent < events; sent += 10_000) {
    const messages = Array.from({ length: Math.min(10_000, events - sent) }, (_, i) => {
      const n = sent + i;
      const iban = `DE89${String(n % ibans).padStart(18, '0')}`;
      const value = {
        eventId: String(n).padStart(64, '0'),
        alertId: `A-${n % ibans}`,
        iban,
        bic: null,
        qualification: 'CONFIRMED',
        qualificationRaw: null,
        reportsCount: n % 7,
        updatedAt: 1_795_000_000_000 + n,
        observedAt: 1_795_000_000_000 + n,
      };
      return { key: iban, value: n % 10 === 9 ? deactivated.encode(value) : upserted.encode(value) };
    });
    await producer.send({ topic, messages, compression });
  }
  await producer.disconnect();
  console.log(
    `wrote ${fmt(events)} events over ${fmt(ibans)} IBANs (KAFKA_COMPRESSION=${codec}) in ${((performance.now() - fill) / 1000).toFixed(1)} s`,
  );

  // Bare kafkajs consumers, no decoding, each in a process of its own (bench/bare-consumer.ts): stock
  // kafkajs (the target's baseline), and kafkajs with fraudlink's fixes (replay's overhead over its
  // own client).
  const bareRead = async (fixes: boolean): Promise<number> => {
    const { rate } = await runBare<{ rate: number }>('./bare-consumer.ts', {
      BARE_BROKERS: stack.brokers,
      BARE_TOPIC: topic,
      BARE_EVENTS: String(events),
      BARE_KAFKAJS_FIXES: fixes ? '1' : '0',
    });
    return rate;
  };
  const replayRead = async () => {
    const started = performance.now();
    const result = await replayAlerts({
      kafka: { brokers: [stack.brokers], clientId: 'bench', ssl: false },
      registry: { url: stack.registryUrl },
      alertsTopic: topic,
    });
    return { rate: events / ((performance.now() - started) / 1000), result };
  };

  // Rounds alternate the readers, so that none has the machine to itself for long; each round's
  // figures are printed, and the median of the rounds' ratios is the figure.
  const ratios: number[] = [];
  const ownRatios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const bare = await bareRead(false);
    const fixed = await bareRead(true);
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const { rate: replay, result } = await replayRead();
    ratios.push(replay / bare);
    ownRatios.push(replay / fixed);
    let held = '';
    if (round === 1) {
      // Measured once: a later round's table replaces one that may not have been collected yet.
      global.gc?.();
      const mb = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;
      held = `; heap held by the table: ${mb.toFixed(1)} MB for ${fmt(result.alerts.size)} alerts (${fmt(events)} events)`;
    }
    console.log(
      `round ${round}: bare kafkajs consumer (no decoding) ${fmt(bare)} records/s stock, ${fmt(fixed)} with fraudlink's kafkajs fixes; replayAlerts (decode + apply) ${fmt(replay)} events/s; ratio ${(replay / bare).toFixed(2)} (${(replay / fixed).toFixed(2)} against the fixed client)${held}`,
    );
  }
  console.log(
    `ratio replay / bare stock kafkajs, median of ${rounds} rounds: ${median(ratios).toFixed(2)} (target >= 0.60); against the fixed client: ${median(ownRatios).toFixed(2)}`,
  );
  await admin.deleteTopics({ topics: [topic] }).catch(() => {});
  await admin.disconnect();
  await stack.stop();
}

if (import.meta.main) await run();
