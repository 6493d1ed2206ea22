// Connector throughput: the sandbox feed (1,000-row pages, a 200,000-row backlog) through the
// connector into Kafka, beside a bare kafkajs transactional producer sending the same records the
// connector published (read back from its topic: key, Avro value, headers) in the same transaction
// size, in one run on the same broker; plus CPU per row of connector, sandbox and broker.
import { randomUUID } from 'node:crypto';
import { createSandbox, sandboxUpstreamEnv } from '../src/sandbox/index.ts';
import {
  benchStack,
  childMemoryLimitMb,
  cli,
  cpuMs,
  fmt,
  freePort,
  imageEnv,
  imageNodeFlags,
  metric,
  peakRssMb,
  runBare,
  until,
} from './common.ts';
import { countEnv } from './env.ts';

const TX = 5000;

/**
 * A bare kafkajs transactional producer re-sending the connector's records, in a process of its own
 * (bench/bare-producer.ts): stock kafkajs, or kafkajs with fraudlink's fixes.
 */
async function bareRun(brokers: string, sourceTopic: string, rows: number, fixes: boolean): Promise<number> {
  const { rate } = await runBare<{ rate: number }>('./bare-producer.ts', {
    BARE_BROKERS: brokers,
    BARE_SOURCE_TOPIC: sourceTopic,
    BARE_ROWS: String(rows),
    BARE_TX: String(TX),
    BARE_KAFKAJS_FIXES: fixes ? '1' : '0',
  });
  return rate;
}

async function connectorRun(stack: { brokers: string; registryUrl: string; kafkaPid: number }, rows: number) {
  const sandbox = createSandbox({ port: 0, alerts: rows, changesPerSec: 0, pageSize: 1000, rateLimit: 0 });
  const { url } = await sandbox.start();
  const port = await freePort();
  const prefix = `bench.${randomUUID().slice(0, 8)}`;
  const child = cli(['connector'], {
    ...sandboxUpstreamEnv(url),
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
    // The codec to measure, when set (uncompressed otherwise, as by default).
    ...(process.env.KAFKA_COMPRESSION !== undefined && { KAFKA_COMPRESSION: process.env.KAFKA_COMPRESSION }),
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
  const rows = countEnv('BENCH_ROWS', 200_000);
  const stack = await benchStack();
  const connector = await connectorRun(stack, rows);
  const bare = await bareRun(stack.brokers, connector.topic, rows, false);
  const bareFixed = await bareRun(stack.brokers, connector.topic, rows, true);
  const node = [...imageNodeFlags, process.env.BENCH_CHILD_NODE_OPTIONS ?? ''].join(' ').trim();
  const env = Object.entries(imageEnv)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const cgroup = childMemoryLimitMb ? `, in a ${childMemoryLimitMb} MiB memory cgroup` : '';
  console.log(
    `rows: ${fmt(rows)}, ${TX} records per transaction; connector run as the image runs it: node ${node} ` +
      `bin/fraudlink.js (compiled dist/), env ${env}${cgroup}, ` +
      `KAFKA_COMPRESSION=${process.env.KAFKA_COMPRESSION ?? 'none'}`,
  );
  console.log(
    `bare kafkajs transactional producer (stock kafkajs, own process), the connector's own records (key, Avro value, 3 headers): ${fmt(bare)} records/s`,
  );
  console.log(`connector (sandbox feed -> Avro -> Kafka):  ${fmt(connector.rate)} rows/s`);
  console.log(`ratio connector / bare: ${(connector.rate / bare).toFixed(2)} (target >= 0.80)`);
  console.log(
    `the same bare producer on kafkajs with fraudlink's fixes (src/kafka/kafkajs.ts): ${fmt(bareFixed)} records/s; connector / that: ${(connector.rate / bareFixed).toFixed(2)}`,
  );
  console.log(
    `connector CPU per row: connector ${connector.cpu.connector.toFixed(1)} µs, sandbox ${connector.cpu.sandbox.toFixed(1)} µs, broker ${connector.cpu.broker.toFixed(1)} µs`,
  );
  console.log(
    `connector peak RSS: ${connector.rss.toFixed(0)} MB (target < 200 MB at 1,000,000 rows; BENCH_ROWS=${rows})`,
  );
  await stack.stop();
}

if (import.meta.main) await run();
