import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { StackError } from '../errors.ts';
import { createKafkaClient } from '../kafka/index.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { isAlive, spawnJvm } from './process.ts';

const run = promisify(execFile);

/** A free TCP port on loopback (bound then released; the JVM binds it a moment later). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

async function waitFor(
  what: string,
  pid: number,
  logFile: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) throw new StackError(`${what} exited during start-up; see ${logFile}`);
    if (await probe().catch(() => false)) return;
    await delay(250);
  }
  throw new StackError(`${what} was not ready after ${timeoutMs / 1000} s; see ${logFile}`);
}

/**
 * A random KRaft cluster id: 16 bytes, base64url. Like Kafka's `Uuid.randomUuid()`, never one that
 * starts with '-', which a command line would read as an option (1 start in 64 failed that way).
 */
export function randomClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * The JVM flags Kafka's own start script gives a broker (KAFKA_JVM_PERFORMANCE_OPTS in
 * bin/kafka-run-class.sh). G1's default pause goal is 200 ms: without these flags the broker's young
 * collections took 20-43 ms each, every few seconds, and every request in flight waited them out.
 */
export const KAFKA_JVM_PERFORMANCE_OPTS = [
  '-server',
  '-XX:+UseG1GC',
  '-XX:MaxGCPauseMillis=20',
  '-XX:InitiatingHeapOccupancyPercent=35',
  '-XX:+ExplicitGCInvokesConcurrent',
  '-XX:MaxInlineLevel=15',
  '-Djava.awt.headless=true',
];

const LOG4J2 = `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="[%d] %p %m (%c)%n"/></Console></Appenders>
  <Loggers>
    <Root level="WARN"><AppenderRef ref="out"/></Root>
    <Logger name="kafka.server.KafkaServer" level="INFO"/>
    <Logger name="kafka.server.BrokerServer" level="INFO"/>
  </Loggers>
</Configuration>
`;

/**
 * The broker's settings beside its listeners and log dir. StandardAuthorizer, with every principal
 * allowed what no ACL names (`allow.everyone.if.no.acl.found`): a client without credentials
 * (User:ANONYMOUS on PLAINTEXT) may do anything as without an authorizer, and a test can refuse it
 * its own topic with a DENY ACL (a requester's reply topic the verifier may not Describe or Write).
 * With no ACL on a resource, each check is a lookup in the authorizer's (empty) ACL index that falls
 * back to allowing, a few per request: the benchmarks' broker does no more work worth counting.
 */
export const KAFKA_SETTINGS = [
  'process.roles=broker,controller',
  'node.id=1',
  'controller.listener.names=CONTROLLER',
  'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
  'inter.broker.listener.name=PLAINTEXT',
  'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
  'allow.everyone.if.no.acl.found=true',
  'num.partitions=1',
  'default.replication.factor=1',
  'offsets.topic.replication.factor=1',
  'offsets.topic.num.partitions=10',
  'transaction.state.log.replication.factor=1',
  'transaction.state.log.min.isr=1',
  'transaction.state.log.num.partitions=10',
  'group.initial.rebalance.delay.ms=0',
  'auto.create.topics.enable=false',
  'log.cleaner.backoff.ms=1000',
];

/**
 * Names KAFKA_SETTINGS, recorded with a running stack (StackInfo.kafkaSettings): a stack whose
 * broker an older fraudlink started with other settings (no authorizer, say) is not reused.
 */
export const KAFKA_SETTINGS_ID = createHash('sha256')
  .update(KAFKA_SETTINGS.join('\n'))
  .digest('hex')
  .slice(0, 12);

export interface KafkaNode {
  pid: number;
  port: number;
  brokers: string;
  logFile: string;
}

export interface KafkaLaunch {
  java: string;
  libs: string;
  dir: string;
  ownerPid?: number;
}

/**
 * `base` with each `key=value` of `overrides` in place of the base's line for that key, and the
 * overrides' other lines after it.
 */
export function withProperties(base: readonly string[], overrides: readonly string[]): string[] {
  const keyOf = (line: string) => line.slice(0, line.indexOf('='));
  const replaced = new Set(overrides.map(keyOf));
  return [...base.filter((line) => !replaced.has(keyOf(line))), ...overrides];
}

/**
 * Formats a fresh KRaft log dir with `properties` (plus `formatArgs`, e.g. SCRAM users) and starts
 * one combined broker+controller with them; ready once an admin call on `probeBrokers` succeeds.
 */
export async function launchKafka(
  options: KafkaLaunch,
  properties: readonly string[],
  probeBrokers: string,
  extra: { formatArgs?: string[]; jvmArgs?: string[] } = {},
): Promise<{ pid: number; logFile: string }> {
  mkdirSync(join(options.dir, 'data'), { recursive: true });
  const file = join(options.dir, 'server.properties');
  writeFileSync(file, [...properties, `log.dirs=${join(options.dir, 'data')}`, ''].join('\n'));
  const log4j = join(options.dir, 'log4j2.xml');
  writeFileSync(log4j, LOG4J2);
  const cp = join(options.libs, '*');
  const clusterId = randomClusterId();
  try {
    await run(options.java, [
      `-Dlog4j2.configurationFile=${log4j}`,
      '-cp',
      cp,
      'kafka.tools.StorageTool',
      'format',
      `--cluster-id=${clusterId}`,
      '-c',
      file,
      ...(extra.formatArgs ?? []),
    ]);
  } catch (err) {
    throw new StackError(`formatting Kafka storage failed: ${(err as { stderr?: string }).stderr ?? err}`, {
      cause: err,
    });
  }
  return runKafka(options, probeBrokers, extra.jvmArgs);
}

/**
 * Starts the broker whose settings and storage `options.dir` holds (launchKafka formatted it);
 * ready once an admin call on `probeBrokers` succeeds.
 */
async function runKafka(
  options: KafkaLaunch,
  probeBrokers: string,
  jvmArgs: string[] = [],
): Promise<{ pid: number; logFile: string }> {
  const logFile = join(options.dir, 'kafka.log');
  const { pid } = spawnJvm(
    options.java,
    [
      '-Xms256m',
      '-Xmx1g',
      ...KAFKA_JVM_PERFORMANCE_OPTS,
      ...jvmArgs,
      `-Dlog4j2.configurationFile=${join(options.dir, 'log4j2.xml')}`,
      '-cp',
      join(options.libs, '*'),
      'kafka.Kafka',
      join(options.dir, 'server.properties'),
    ],
    logFile,
    options.ownerPid,
  );
  // An open port is not enough: wait for a real admin call to succeed.
  await waitFor('Kafka', pid, logFile, 120_000, () => probeKafka(probeBrokers));
  return { pid, logFile };
}

/**
 * Starts again a broker that startKafka started in `options.dir` and that has stopped since: same
 * ports, same data (for tests of an outage).
 */
export async function restartKafka(options: KafkaLaunch, node: KafkaNode): Promise<KafkaNode> {
  const { pid, logFile } = await runKafka(options, node.brokers);
  return { ...node, pid, logFile };
}

/**
 * Formats a fresh KRaft log dir and starts one combined broker+controller on loopback, its client
 * listener on `port` if given (a free one otherwise).
 */
export async function startKafka(
  options: KafkaLaunch & { logger?: Logger; port?: number },
): Promise<KafkaNode> {
  const [port, controllerPort] = [options.port ?? (await freePort()), await freePort()];
  const brokers = `127.0.0.1:${port}`;
  const { pid, logFile } = await launchKafka(
    options,
    [
      ...KAFKA_SETTINGS,
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    ],
    brokers,
  );
  return { pid, port, brokers, logFile };
}

export async function probeKafka(brokers: string): Promise<boolean> {
  const client = createKafkaClient({
    config: { brokers: [brokers], clientId: 'fraudlink-stack-probe', ssl: false },
    logger: silentLogger(),
    retry: { retries: 0, initialRetryTime: 100 },
  });
  const admin = await client.admin();
  try {
    const cluster = await admin.describeCluster();
    return cluster.brokers > 0;
  } finally {
    await admin.close();
  }
}

export interface RegistryNode {
  pid: number;
  port: number;
  url: string;
  logFile: string;
}

/** Starts Apicurio Registry on loopback, in-memory storage, Confluent-compatible API. */
export async function startRegistry(options: {
  java: string;
  jar: string;
  dir: string;
  ownerPid?: number;
}): Promise<RegistryNode> {
  const [port, managementPort] = [await freePort(), await freePort()];
  mkdirSync(options.dir, { recursive: true });
  const logFile = join(options.dir, 'registry.log');
  const { pid } = spawnJvm(
    options.java,
    [
      '-Xms128m',
      '-Xmx512m',
      '-Dquarkus.http.host=127.0.0.1',
      `-Dquarkus.http.port=${port}`,
      // The 3.3 build fixes the management interface on (quarkus.management.enabled=false is
      // ignored at run time), listening on 0.0.0.0:9000: keep it on loopback and a free port.
      '-Dquarkus.management.host=127.0.0.1',
      `-Dquarkus.management.port=${managementPort}`,
      '-Dapicurio.rules.global.compatibility=BACKWARD',
      '-Dapicurio.ccompat.use-canonical-hash=true',
      '-Dquarkus.log.level=WARN',
      '-jar',
      options.jar,
    ],
    logFile,
    options.ownerPid,
  );
  const url = `http://127.0.0.1:${port}/apis/ccompat/v7`;
  await waitFor('Apicurio Registry', pid, logFile, 120_000, () => probeRegistry(url));
  return { pid, port, url, logFile };
}

export async function probeRegistry(url: string): Promise<boolean> {
  const response = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(2000) });
  await response.arrayBuffer();
  return response.status === 200;
}
