import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StackError } from '../errors.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { ensureApicurio, ensureKafka } from './install.ts';
import { requireJava } from './java.ts';
import { cacheDir } from './paths.ts';
import { isAlive, stopProcess } from './process.ts';
import { KAFKA_SETTINGS_ID, probeKafka, probeRegistry, startKafka, startRegistry } from './services.ts';

export interface StackInfo {
  brokers: string;
  registryUrl: string;
  kafkaPid: number;
  registryPid: number;
  dir: string;
  /** The process whose death ends the stack; absent for a stack started by `up`. */
  ownerPid?: number;
  registryVersion: string;
  /** The broker's settings (KAFKA_SETTINGS_ID); absent in a stack an older fraudlink started. */
  kafkaSettings?: string;
  startedAt: string;
}

export interface Stack extends StackInfo {
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The stack dies with this process (tests); omit for a stack that outlives its starter (`up`). */
  ownerPid?: number;
  logger?: Logger;
}

/** Where `up` records its stack; tests use their own file so they never touch a developer's stack. */
export const defaultStateFile = () => join(cacheDir(), 'state.json');

function withStop(info: StackInfo): Stack {
  return {
    ...info,
    async stop() {
      await Promise.all([stopProcess(info.kafkaPid), stopProcess(info.registryPid)]);
      rmSync(info.dir, { recursive: true, force: true });
    },
  };
}

/** Installs (once) and starts Kafka and the registry side by side on free loopback ports. */
export async function startStack(options: StartOptions = {}): Promise<Stack> {
  const logger = options.logger ?? silentLogger();
  const [kafkaJava, registryJava] = await Promise.all([
    requireJava(17, 'Kafka'),
    requireJava(17, 'Apicurio Registry'),
  ]);
  const newest = await requireJava(21, 'Apicurio Registry 3.3').catch(() => registryJava);
  const [libs, apicurio] = await Promise.all([ensureKafka(logger), ensureApicurio(newest.major, logger)]);
  const dir = join(cacheDir(), 'run', randomUUID().slice(0, 8));
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const [kafka, registry] = await Promise.allSettled([
    startKafka({
      java: kafkaJava.java,
      libs,
      dir: join(dir, 'kafka'),
      ...(options.ownerPid && { ownerPid: options.ownerPid }),
    }),
    startRegistry({
      java: newest.java,
      jar: apicurio.jar,
      dir: join(dir, 'registry'),
      ...(options.ownerPid && { ownerPid: options.ownerPid }),
    }),
  ]);
  if (kafka.status === 'rejected' || registry.status === 'rejected') {
    // Never leave half a stack running.
    if (kafka.status === 'fulfilled') await stopProcess(kafka.value.pid);
    if (registry.status === 'fulfilled') await stopProcess(registry.value.pid);
    const reason = kafka.status === 'rejected' ? kafka.reason : (registry as PromiseRejectedResult).reason;
    throw reason instanceof StackError
      ? reason
      : new StackError('starting the local stack failed', { cause: reason });
  }
  logger.info(
    { ms: Date.now() - started, brokers: kafka.value.brokers, registry: registry.value.url },
    'local stack ready',
  );
  return withStop({
    brokers: kafka.value.brokers,
    registryUrl: registry.value.url,
    kafkaPid: kafka.value.pid,
    registryPid: registry.value.pid,
    dir,
    ...(options.ownerPid && { ownerPid: options.ownerPid }),
    registryVersion: apicurio.version,
    kafkaSettings: KAFKA_SETTINGS_ID,
    startedAt: new Date().toISOString(),
  });
}

/**
 * The stack started by `up`, when it still runs and answers; `outdated` when its broker runs other
 * settings than KAFKA_SETTINGS (an older fraudlink started it: no authorizer, say).
 */
export async function probeRunningStack(
  stateFile = defaultStateFile(),
): Promise<{ stack: Stack; outdated: boolean } | undefined> {
  if (!existsSync(stateFile)) return undefined;
  let info: StackInfo;
  try {
    info = JSON.parse(readFileSync(stateFile, 'utf8')) as StackInfo;
  } catch {
    return undefined;
  }
  if (!isAlive(info.kafkaPid) || !isAlive(info.registryPid)) return undefined;
  const answers = await Promise.all([
    probeKafka(info.brokers).catch(() => false),
    probeRegistry(info.registryUrl).catch(() => false),
  ]);
  if (!answers.every(Boolean)) return undefined;
  return { stack: withStop(info), outdated: info.kafkaSettings !== KAFKA_SETTINGS_ID };
}

/**
 * The stack started by `up`, when it still runs, answers and runs today's broker settings: tests
 * that deny a topic with an ACL need the authorizer, and start a stack of their own rather than
 * reuse an outdated one.
 */
export async function findRunningStack(stateFile = defaultStateFile()): Promise<Stack | undefined> {
  const running = await probeRunningStack(stateFile);
  return running && !running.outdated ? running.stack : undefined;
}

/**
 * `up`: reuses the running stack or starts one that outlives this process. An outdated one is not
 * stopped unasked (others may use it): `up` fails, naming it, until `down` has stopped it.
 */
export async function up(
  logger?: Logger,
  stateFile = defaultStateFile(),
): Promise<{ stack: Stack; reused: boolean }> {
  const running = await probeRunningStack(stateFile);
  if (running?.outdated) {
    throw new StackError(
      `the running stack (Kafka at ${running.stack.brokers}) was started with other broker settings ` +
        "than this fraudlink's (an older one: no ACL authorizer, say); stop it with " +
        '`npm run stack -- down`, then start it again',
    );
  }
  if (running) return { stack: running.stack, reused: true };
  await down(stateFile);
  const stack = await startStack(logger ? { logger } : {});
  const { stop: _stop, ...info } = stack;
  writeFileSync(stateFile, JSON.stringify(info, null, 2));
  return { stack, reused: false };
}

/** `down`: stops the stack started by `up` (also a half-dead one) and forgets it. */
export async function down(stateFile = defaultStateFile()): Promise<StackInfo | undefined> {
  if (!existsSync(stateFile)) return undefined;
  let info: StackInfo | undefined;
  try {
    info = JSON.parse(readFileSync(stateFile, 'utf8')) as StackInfo;
  } catch {
    // An unreadable state file names no process to stop.
  }
  if (info) await withStop(info).stop();
  rmSync(stateFile, { force: true });
  return info;
}
