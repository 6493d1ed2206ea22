// The alert table service (`fraudlink table`), each figure beside its baseline from the same run:
// - building the table from a topic of 1,000,000 events over 50,000 IBANs, against replayAlerts
//   reading the same topic (target: at least 0.5x its rate);
// - peak RSS of the table process holding 1,000,000 distinct IBANs (target: under 250 MB), beside its
//   peak on the 50,000-IBAN topic;
// - lookups at full load and at a fixed rate, against a bare node:http server answering from a Map
//   of the same table (targets: throughput at least 0.5x, p99 at most 2x).
// The table service and the bare server run as processes of their own; the load comes from this
// process through an undici Pool with pipelining.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { type AlertState, replayAlerts } from '../src/replay/index.ts';
import { type AlertTopic, benchIban, writeAlertTopic } from './alert-events.ts';
import {
  benchStack,
  cli,
  cpuMs,
  fmt,
  freePort,
  imageNodeFlags,
  median,
  metric,
  peakRssMb,
  percentile,
  until,
} from './common.ts';
import { countEnv } from './env.ts';

/** Connections of the load generator's pool, and requests pipelined on each. */
const CONNECTIONS = 8;
const PIPELINING = 8;

type Stack = Awaited<ReturnType<typeof benchStack>>;

/** A running `fraudlink table` on its own store, and how long it took to be ready. */
interface TableProcess {
  url: string;
  child: ChildProcess;
  readyMs: number;
  /** CPU time (user + system, all threads) the process used to be ready, in ms. */
  readyCpuMs: number;
  stop(): Promise<void>;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Starts the table service on a fresh store for `topic` and waits until /readyz says it caught up. */
async function startTable(stack: Stack, topic: string): Promise<TableProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'fraudlink-bench-table-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = cli(['table'], {
    KAFKA_BROKERS: stack.brokers,
    SCHEMA_REGISTRY_URL: stack.registryUrl,
    ALERTS_TOPIC: topic,
    TABLE_DB_PATH: join(dir, 'table.db'),
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: String(port),
  });
  const stop = async () => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(
            `fraudlink table exited (${child.exitCode ?? child.signalCode}) before it was ready`,
          );
        return (
          (await fetch(`${url}/readyz`).then(
            (r) => r.status,
            () => 0,
          )) === 200
        );
      },
      10 * 60_000,
      50,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    child,
    readyMs: performance.now() - started,
    readyCpuMs: cpuMs(child.pid as number),
    stop,
  };
}

/** The table service's answer for an alert, which the bare server serves as it is. */
const answerOf = (a: AlertState) => ({
  iban: a.iban,
  alertId: a.alertId,
  bic: a.bic,
  qualification: a.qualification,
  qualificationRaw: a.qualificationRaw,
  reportsCount: a.reportsCount,
  updatedAt: new Date(a.updatedAt).toISOString(),
  eventId: a.eventId,
});

/** The bare node:http server over a Map of `table`, in a process of its own. */
async function startBareServer(table: ReadonlyMap<string, AlertState>, dir: string) {
  const file = join(dir, 'table.jsonl');
  writeFileSync(file, [...table.values()].map((a) => `${JSON.stringify(answerOf(a))}\n`).join(''));
  const script = fileURLToPath(new URL('./bare-table-server.ts', import.meta.url));
  // With the node flags and options the table runs with, so that only the servers differ.
  const child = spawn(process.execPath, [...imageNodeFlags, script], {
    env: {
      PATH: process.env.PATH ?? '',
      ...(process.env.BENCH_CHILD_NODE_OPTIONS && { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS }),
      BARE_TABLE_FILE: file,
      BARE_PORT: String(await freePort()),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const { url } = JSON.parse(line) as { url: string };
  return { url, child, stop: () => stopChild(child) };
}

interface LoadFigures {
  rate: number;
  p50: number;
  p99: number;
  hits: number;
}

/**
 * Looks up `paths` in turn through one pipelined pool: as fast as the server answers
 * (`perSecond` undefined, CONNECTIONS x PIPELINING requests outstanding) or at a fixed rate, for
 * `seconds`. Latency is from the request's issue to its body's end.
 */
async function load(url: string, paths: string[], seconds: number, perSecond?: number): Promise<LoadFigures> {
  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: PIPELINING });
  const latencies: number[] = [];
  let hits = 0;
  let next = 0;
  const lookup = async () => {
    const path = paths[next++ % paths.length] as string;
    const t = performance.now();
    const { statusCode, body } = await pool.request({ path, method: 'GET' });
    await body.text();
    latencies.push(performance.now() - t);
    if (statusCode === 200) hits++;
    else if (statusCode !== 404) throw new Error(`GET ${path}: ${statusCode}`);
  };
  const started = performance.now();
  const end = started + seconds * 1000;
  if (perSecond === undefined) {
    await Promise.all(
      Array.from({ length: CONNECTIONS * PIPELINING }, async () => {
        while (performance.now() < end) await lookup();
      }),
    );
  } else {
    const pending: Promise<void>[] = [];
    for (let i = 0; i < perSecond * seconds; i++) {
      const wait = started + (i * 1000) / perSecond - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(lookup());
    }
    await Promise.all(pending);
  }
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    hits: hits / latencies.length,
  };
}

const ms = (x: number) => `${x.toFixed(2)} ms`;

async function buildFigures(stack: Stack, topic: AlertTopic) {
  const started = performance.now();
  const replayed = await replayAlerts({
    kafka: { brokers: [stack.brokers], clientId: 'bench', ssl: false },
    registry: { url: stack.registryUrl },
    alertsTopic: topic.topic,
  });
  const replayRate = topic.events / ((performance.now() - started) / 1000);
  const table = await startTable(stack, topic.topic);
  const tableRate = topic.events / (table.readyMs / 1000);
  const rows = await metric(`${table.url}/metrics`, 'fraudlink_table_rows');
  if (rows !== replayed.alerts.size) {
    await table.stop();
    throw new Error(`the table holds ${rows} rows where replay found ${replayed.alerts.size} alerts`);
  }
  const rss = peakRssMb(table.child.pid as number);
  console.log(
    `build: fraudlink table, fresh store to ready, ${fmt(tableRate)} events/s (${(table.readyMs / 1000).toFixed(1)} s, CPU ${(table.readyCpuMs / 1000).toFixed(1)} s, ${fmt(rows)} rows, peak RSS ${rss.toFixed(0)} MB); replayAlerts on the same topic ${fmt(replayRate)} events/s; ratio ${(tableRate / replayRate).toFixed(2)} (target >= 0.50)`,
  );
  return { table, alerts: replayed.alerts, rss };
}

async function memoryFigures(stack: Stack, distinct: number, smallRss: number, smallIbans: number) {
  const topic = await writeAlertTopic(
    stack,
    `bench.table.distinct.${randomUUID().slice(0, 8)}`,
    distinct,
    distinct,
    {
      deactivations: false,
    },
  );
  try {
    const table = await startTable(stack, topic.topic);
    const rows = await metric(`${table.url}/metrics`, 'fraudlink_table_rows');
    const rss = peakRssMb(table.child.pid as number);
    await table.stop();
    console.log(
      `memory: fraudlink table peak RSS with ${fmt(rows)} distinct IBANs ${rss.toFixed(0)} MB (target < 250 MB; built at ${fmt(distinct / (table.readyMs / 1000))} events/s, CPU ${(table.readyCpuMs / 1000).toFixed(1)} s); the same process with ${fmt(smallIbans)} IBANs in this run: ${smallRss.toFixed(0)} MB`,
    );
  } finally {
    await topic.remove();
  }
}

async function lookupFigures(tableUrl: string, alerts: ReadonlyMap<string, AlertState>, ibans: number) {
  const seconds = countEnv('BENCH_LOOKUP_SECONDS', 8);
  const fixedRate = countEnv('BENCH_LOOKUP_RATE', 2000);
  const rounds = countEnv('BENCH_ROUNDS', 2);
  const dir = mkdtempSync(join(tmpdir(), 'fraudlink-bench-bare-'));
  const bare = await startBareServer(alerts, dir);
  try {
    // IBANs drawn over the whole topic: most have an alert, those whose last event deactivated it not.
    const paths = Array.from(
      { length: 100_000 },
      () => `/v1/alerts/${benchIban(Math.floor(Math.random() * ibans))}`,
    );
    // Warm-up: both servers' JIT, both pools' connections.
    await load(bare.url, paths, 2);
    await load(tableUrl, paths, 2);
    const throughput: number[] = [];
    const fullP99: number[] = [];
    const fixedP99: number[] = [];
    // Rounds alternate the servers, so that neither has the machine to itself for long.
    for (let round = 1; round <= rounds; round++) {
      const bareFull = await load(bare.url, paths, seconds);
      const tableFull = await load(tableUrl, paths, seconds);
      const bareFixed = await load(bare.url, paths, seconds, fixedRate);
      const tableFixed = await load(tableUrl, paths, seconds, fixedRate);
      throughput.push(tableFull.rate / bareFull.rate);
      fullP99.push(tableFull.p99 / bareFull.p99);
      fixedP99.push(tableFixed.p99 / bareFixed.p99);
      console.log(
        `round ${round}: full load (${CONNECTIONS} connections x ${PIPELINING} pipelined): table ${fmt(tableFull.rate)} lookups/s, p50 ${ms(tableFull.p50)}, p99 ${ms(tableFull.p99)}; bare Map server ${fmt(bareFull.rate)}/s, p50 ${ms(bareFull.p50)}, p99 ${ms(bareFull.p99)} (hits ${(tableFull.hits * 100).toFixed(0)}% and ${(bareFull.hits * 100).toFixed(0)}%)`,
      );
      console.log(
        `round ${round}: ${fmt(fixedRate)} lookups/s: table p50 ${ms(tableFixed.p50)}, p99 ${ms(tableFixed.p99)}; bare Map server p50 ${ms(bareFixed.p50)}, p99 ${ms(bareFixed.p99)}`,
      );
    }
    console.log(
      `lookups, median of ${rounds} rounds: throughput ratio table / bare ${median(throughput).toFixed(2)} (target >= 0.50); p99 ratio at full load ${median(fullP99).toFixed(2)}, at ${fmt(fixedRate)}/s ${median(fixedP99).toFixed(2)} (target <= 2)`,
    );
  } finally {
    await bare.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const events = countEnv('BENCH_EVENTS', 1_000_000);
  const ibans = countEnv('BENCH_IBANS', 50_000);
  const distinct = countEnv('BENCH_DISTINCT_IBANS', 1_000_000);
  const stack = await benchStack();
  const topic = await writeAlertTopic(stack, `bench.table.${randomUUID().slice(0, 8)}`, events, ibans);
  try {
    const { table, alerts, rss } = await buildFigures(stack, topic);
    try {
      await lookupFigures(table.url, alerts, topic.ibans);
    } finally {
      await table.stop();
    }
    await memoryFigures(stack, distinct, rss, topic.ibans);
  } finally {
    await topic.remove();
    await stack.stop();
  }
}

if (import.meta.main) await run();
