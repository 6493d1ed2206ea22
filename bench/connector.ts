// Connector throughput: the sandbox feed (1,000-row pages, a 200,000-row backlog) through the
// connector into Kafka, beside a bare kafkajs transactional producer sending the same records the
// connector published (read back from its topic: key, Avro value, headers) in the same transaction
// size, in one run on the same broker; plus CPU per row of connector, sandbox and broker.
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { createSandbox } from '../src/sandbox/index.ts';
import {
  bareTransactionalProducer,
  benchStack,
  cli,
  cpuMs,
  fmt,
  freePort,
  imageNodeFlags,
  metric,
  peakRssMb,
  until,
} from './common.ts';

const TX = 5000;

/** The connector's own records (key, Avro value, headers), read back from its topic: "the same records". */
async function recordsOf(brokers: string, topic: string, n: number): Promise<kafkajs.Message[]> {
  const kafka = new kafkajs.Kafka({
    brokers: [brokers],
    clientId: 'bench-read',
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const consumer = kafka.consumer({ groupId: `bench-read-${randomUUID()}`, maxBytes: 16 * 1024 * 1024 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out: kafkajs.Message[] = [];
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          if (m.value) out.push({ key: m.key, value: m.value, headers: m.headers });
        }
        if (out.length >= n) resolve();
      },
    });
  });
  await consumer.disconnect();
  return out.slice(0, n);
}

async function bareProducer(brokers: string, messages: kafkajs.Message[]): Promise<number> {
  const rows = messages.length;
  const kafka = new kafkajs.Kafka({
    brokers: [brokers],
    clientId: 'bench-bare',
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  const topic = `bench.bare.${randomUUID().slice(0, 8)}`;
  await admin.createTopics({ topics: [{ topic, numPartitions: 6, replicationFactor: 1 }] });
  const producer = await bareTransactionalProducer(kafka);
  const started = performance.now();
  for (let sent = 0; sent < rows; sent += TX) {
    const tx = await producer.transaction();
    await tx.send({ topic, messages: messages.slice(sent, sent + TX), acks: -1 });
    await tx.commit();
  }
  const rate = rows / ((performance.now() - started) / 1000);
  await producer.disconnect();
  await admin.deleteTopics({ topics: [topic] }).catch(() => {});
  await admin.disconnect();
  return rate;
}

async function connectorRun(stack: { brokers: string; registryUrl: string; kafkaPid: number }, rows: number) {
  const sandbox = createSandbox({ port: 0, alerts: rows, changesPerSec: 0, pageSize: 1000, rateLimit: 0 });
  const { url } = await sandbox.start();
  const port = await freePort();
  const prefix = `bench.${randomUUID().slice(0, 8)}`;
  const child = cli(['connector'], {
    API_BASE_URL: url,
    API_KEY: 'sandbox-key',
    KAFKA_BROKERS: stack.brokers,
    SCHEMA_REGISTRY_URL: stack.registryUrl,
    ALERTS_TOPIC: `${prefix}.alerts`,
    ALERTS_DLQ_TOPIC: `${prefix}.dlq`,
    CONNECTOR_OFFSETS_TOPIC: `${prefix}.offsets`,
    CONNECTOR_NAME: prefix,
    CONNECTOR_TX_MAX_ROWS: String(TX),
    ALERTS_TOPIC_PARTITIONS: '6',
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: String(port),
  });
  const metrics = `http://127.0.0.1:${port}/metrics`;
  await until(
    async () => (await metric(metrics, 'fraudlink_connector_rows_published_total')) > 0,
    120_000,
    20,
  );
  const started = performance.now();
  const first = await metric(metrics, 'fraudlink_connector_rows_published_total');
  const cpuBefore = {
    connector: cpuMs(child.pid as number),
    sandbox: process.cpuUsage(),
    broker: cpuMs(stack.kafkaPid),
  };
  await until(
    async () => (await metric(metrics, 'fraudlink_connector_rows_published_total')) >= rows,
    600_000,
    50,
  );
  const seconds = (performance.now() - started) / 1000;
  const sandboxCpu = process.cpuUsage(cpuBefore.sandbox);
  const perRow = (ms: number) => (ms * 1000) / (rows - first);
  const cpu = {
    connector: perRow(cpuMs(child.pid as number) - cpuBefore.connector),
    sandbox: perRow((sandboxCpu.user + sandboxCpu.system) / 1000),
    broker: perRow(cpuMs(stack.kafkaPid) - cpuBefore.broker),
  };
  const rss = peakRssMb(child.pid as number);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await sandbox.stop();
  return { rate: (rows - first) / seconds, rss, topic: `${prefix}.alerts`, cpu };
}

export async function run(): Promise<void> {
  const rows = Number(process.env.BENCH_ROWS ?? 200_000);
  const stack = await benchStack();
  const connector = await connectorRun(stack, rows);
  const records = await recordsOf(stack.brokers, connector.topic, rows);
  const bare = await bareProducer(stack.brokers, records);
  console.log(
    `rows: ${fmt(rows)}, ${TX} records per transaction; connector run as the image runs it: node ${[...imageNodeFlags, process.env.BENCH_CHILD_NODE_OPTIONS ?? ''].join(' ').trim()}`,
  );
  console.log(
    `bare kafkajs transactional producer, the connector's own records (key, Avro value, 3 headers): ${fmt(bare)} records/s`,
  );
  console.log(`connector (sandbox feed -> Avro -> Kafka):  ${fmt(connector.rate)} rows/s`);
  console.log(`ratio connector / bare: ${(connector.rate / bare).toFixed(2)} (target >= 0.80)`);
  console.log(
    `connector CPU per row: connector ${connector.cpu.connector.toFixed(1)} µs, sandbox ${connector.cpu.sandbox.toFixed(1)} µs, broker ${connector.cpu.broker.toFixed(1)} µs`,
  );
  console.log(
    `connector peak RSS: ${connector.rss.toFixed(0)} MB (target < 200 MB at 1,000,000 rows; BENCH_ROWS=${rows})`,
  );
  await stack.stop();
}

if (import.meta.main) await run();
