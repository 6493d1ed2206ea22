// `npm start`: the whole pipeline, live, with no configuration. A real Kafka broker and schema
// registry (the `npm run stack -- up` one when running, else one owned by this process), the sandbox
// with a steady stream of changes, the connector, the verifier and the alert table service, a
// verification round trip every few seconds through the requester client, and an IBAN lookup over
// the table's HTTP API. Ctrl-C stops everything.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import logUpdate from 'log-update';
import pino from 'pino';
import { loadConnectorConfig, loadTableConfig, loadVerifierConfig } from '../config/index.ts';
import { startConnector } from '../connector/index.ts';
import { createLogger } from '../logger.ts';
import { clientConfigOf, createVerificationClient } from '../requester/index.ts';
import { createSandbox, sandboxUpstreamEnv } from '../sandbox/index.ts';
import { cacheDir } from '../stack/paths.ts';
import { findRunningStack, startStack } from '../stack/stack.ts';
import { startTableService } from '../table/index.ts';
import { startVerifier } from '../verifier/index.ts';
import { lookUpOneAlert, renderStatus, type Snapshot, scrape } from './status.ts';

const logDir = join(cacheDir(), '..', 'dev');
mkdirSync(logDir, { recursive: true });
const logFile = join(logDir, 'pipeline.log');
const logger = createLogger({ level: 'info', destination: pino.destination({ dest: logFile, sync: false }) });
const tty = Boolean(process.stdout.isTTY);
const say = (line: string) => process.stdout.write(`${line}\n`);

// An existing cluster may be named with KAFKA_BROKERS and SCHEMA_REGISTRY_URL; else the `up` stack or a new one.
const given =
  process.env.KAFKA_BROKERS && process.env.SCHEMA_REGISTRY_URL
    ? {
        brokers: process.env.KAFKA_BROKERS,
        registryUrl: process.env.SCHEMA_REGISTRY_URL,
        kafkaPid: 0,
        registryPid: 0,
        stop: async () => {},
      }
    : undefined;
if (!given) say('fraudlink: starting a local Kafka broker and schema registry…');
const running = given ?? (await findRunningStack());
const stack = running ?? (await startStack({ ownerPid: process.pid, logger }));
const sandbox = createSandbox({
  port: 0,
  alerts: 2000,
  changesPerSec: 20,
  rateLimit: 10,
  faults: { malformedRowRate: 0.01 },
  logger: logger.child({ component: 'sandbox' }),
});
const { url } = await sandbox.start();
const env = {
  ...sandboxUpstreamEnv(url),
  KAFKA_BROKERS: stack.brokers,
  SCHEMA_REGISTRY_URL: stack.registryUrl,
  TOPIC_REPLICATION_FACTOR: '1',
  POLL_INTERVAL_MS: '1000',
  HTTP_HOST: '127.0.0.1',
  HTTP_PORT: '0',
  VERIFY_TOPIC_PARTITIONS: '3',
  ALERTS_TOPIC_PARTITIONS: '3',
  // Each run's sandbox is a new feed: a fresh cursor key keeps a reused stack's old cursor out of it.
  CONNECTOR_NAME: `npm-start-${Date.now()}`,
};
const connectorConfig = loadConnectorConfig(env);
const verifierConfig = loadVerifierConfig(env);
const connector = await startConnector(connectorConfig, logger);
const verifier = await startVerifier(verifierConfig, logger, { instanceId: 'npm-start' });
// The table's store is this run's own: it is built from the alerts topic at start and removed at the end.
const tableDir = mkdtempSync(join(tmpdir(), 'fraudlink-start-table-'));
const table = await startTableService(
  loadTableConfig({ ...env, TABLE_DB_PATH: join(tableDir, 'table.db') }),
  logger,
);
const client = createVerificationClient(clientConfigOf(verifierConfig));
await client.ready();

say(`
Pipeline running. Point your own tools at it:
  KAFKA_BROKERS=${stack.brokers}
  SCHEMA_REGISTRY_URL=${stack.registryUrl}
  topics: ${connectorConfig.topics.alertsTopic} (alerts, compacted), ${connectorConfig.topics.alertsDlqTopic} (DLQ),
          ${connectorConfig.topics.offsetsTopic} (cursor), ${verifierConfig.verifier.requestsTopic} -> ${verifierConfig.verifier.repliesTopic}
  sandbox (upstream stand-in): ${url}  (x-api-key: sandbox-key)
  alert table (page for analysts): ${table.url}/   lookups: ${table.url}/v1/alerts/{iban}
  metrics: ${connector.opsUrl}/metrics (connector), ${verifier.opsUrl}/metrics (verifier), ${table.url}/metrics (table)
  logs: ${logFile}
  stack: ${given ? 'given by KAFKA_BROKERS and SCHEMA_REGISTRY_URL' : running ? 'reused from `npm run stack -- up`' : `started for this run (kafka pid ${stack.kafkaPid}, registry pid ${stack.registryPid})`}
  watch the alert table:  KAFKA_BROKERS=${stack.brokers} SCHEMA_REGISTRY_URL=${stack.registryUrl} npx fraudlink replay --follow
Ctrl-C stops everything.
`);

const snapshot: Snapshot = {
  published: 0,
  rejected: 0,
  lag: null,
  rate: 0,
  lastVerification: 'waiting for the first round trip…',
  lastLookup: 'waiting for the table to hold an alert…',
  at: Date.now(),
};
let previous = { published: 0, at: Date.now() };
const rows = () => sandbox.currentRows() as unknown as { iban: string }[];

async function roundTrip(): Promise<void> {
  const all = rows();
  const iban = all[Math.floor(Math.random() * all.length)]?.iban ?? 'DE89370400440532013000';
  const holder = sandbox.holderName(iban);
  const names = [holder, `${holder.slice(0, -1)}e`, 'Jane Doe'];
  const name = names[Math.floor(Math.random() * names.length)] ?? holder;
  const started = Date.now();
  try {
    const reply = await client.verify({ iban, partyName: name }, { timeoutMs: 5000 });
    snapshot.lastVerification = `${iban.slice(0, 4)}… "${name}" -> ${reply.outcome} ${reply.nameMatch ?? ''}${
      reply.matchedName ? ` (${reply.matchedName})` : ''
    } in ${Date.now() - started} ms`;
  } catch (err) {
    snapshot.lastVerification = `failed: ${(err as Error).message}`;
  }
}

async function lookUp(): Promise<void> {
  snapshot.lastLookup = (await lookUpOneAlert(table.url)) ?? snapshot.lastLookup;
}

const timers = [
  setInterval(async () => {
    const m = await scrape(`${connector.opsUrl}/metrics`).catch(() => undefined);
    if (!m) return;
    const now = Date.now();
    snapshot.published = m.published;
    snapshot.rejected = m.rejected;
    snapshot.lag = m.lag;
    snapshot.rate = ((m.published - previous.published) * 1000) / Math.max(1, now - previous.at);
    snapshot.at = now;
    previous = { published: m.published, at: now };
    if (tty) logUpdate(renderStatus(snapshot));
  }, 1000),
  setInterval(() => void roundTrip(), 3000),
  setInterval(() => void lookUp(), 3000),
  ...(tty ? [] : [setInterval(() => say(renderStatus(snapshot).replace(/\n/g, ' | ')), 5000)]),
];
void roundTrip();
void lookUp();

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const t of timers) clearInterval(t);
  if (tty) logUpdate.done();
  say('stopping…');
  await client.close();
  await verifier.stop();
  await table.stop();
  rmSync(tableDir, { recursive: true, force: true });
  await connector.stop();
  await sandbox.stop();
  if (!running) await stack.stop();
  say('stopped.');
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
