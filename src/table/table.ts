import { setImmediate as yieldToLookups } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { type AlertState, alertEventDecoder, warnSkipped } from '../alert-events.ts';
import type { KafkaConfig, RegistryConfig } from '../config/index.ts';
import { OutputError } from '../errors.ts';
import { isValidNormalizedIban, normalizeIban } from '../iban.ts';
import {
  createKafkaClient,
  createSchemaRegistry,
  type IncomingRecord,
  type KafkaAdmin,
  type KafkaClient,
} from '../kafka/index.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { backoffDelay, defaultRetryPolicy, sleep, unlessAborted } from '../retry.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { createTableMetrics } from './metrics.ts';
import { holdStep, PendingSteps, type SkippedRecord } from './pending-steps.ts';
import { type AlertStore, deleteStoreFiles, openAlertStore } from './store.ts';

export interface AlertTableConfig {
  kafka: KafkaConfig;
  registry: RegistryConfig;
  alertsTopic: string;
  /** The store's file (node:sqlite); created, or rebuilt from the topic, when missing or foreign. */
  dbPath: string;
}

export interface AlertTableOptions {
  logger?: Logger;
  /** Where the table's metrics go; a registry of its own by default. */
  metrics?: Registry;
}

/** One IBAN's answer: `iban` as asked; `invalid` when it is not an IBAN (then `alert` is null). */
export interface LookupResult {
  iban: string;
  alert: AlertState | null;
  invalid?: true;
}

export interface ListQuery {
  qualification?: string;
  /** Only alerts updated after this instant (epoch ms). */
  updatedAfter?: number;
  /** At most MAX_PAGE; DEFAULT_PAGE when unset. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface AlertList {
  alerts: AlertState[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

export interface TableStatus {
  /** Caught up with the end offsets taken when the current read started. */
  ready: boolean;
  reason?: string;
  /** Records between the table's position and the end of the topic (as of the last look, ~1 s). */
  offsetLag: number;
  /** When the table last applied an event (epoch ms); undefined before the first. */
  updatedAt: number | undefined;
  rows: number;
}

/**
 * The current alert table of ALERTS_TOPIC, kept in a local store and followed live. Lookups are
 * synchronous reads of the store; they answer from what the store holds while the table catches up
 * or Kafka is away (`status()` says so).
 */
export interface AlertTable {
  /** The IBAN's active alert (any common spelling), or null: no active alert, or not an IBAN. */
  get(iban: string): AlertState | null;
  /** Each IBAN's answer, in the order asked. */
  lookup(ibans: readonly string[]): LookupResult[];
  /** A page of the table in IBAN order. InvalidInputError (INVALID_CURSOR) for a cursor it did not give. */
  list(query: ListQuery): AlertList;
  /** Resolves once the table has caught up with the end offsets taken at the first read's start. */
  caughtUp(): Promise<void>;
  status(): TableStatus;
  /** Resolves once closed; rejects (OutputError) when the store fails (Kafka and registry outages are ridden out). */
  readonly done: Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
/** Longer than any IBAN in any spelling: a longer string is refused before it is normalised. */
const MAX_RAW_IBAN = 64;
/**
 * Records decoded between two turns of the event loop, so that lookups run between them. Live, each
 * fetch's steps are written and committed at once. While catching up (not ready), steps are held
 * until they hold MAX_PENDING_IBANS IBANs or are PENDING_MS old, then written in one transaction:
 * an IBAN that changes again meanwhile is written once, and random IBANs touch most pages of the
 * store in every transaction, so fewer transactions write each page fewer times. Lookups see
 * committed transactions only (the store's reader connection).
 */
const CHUNK_RECORDS = 5000;
const MAX_PENDING_IBANS = 100_000;
const PENDING_MS = 5000;
/** How often the end offsets are read again, for the lag. */
const LAG_POLL_MS = 1000;
/**
 * Fetches of 2 MiB (512 KiB per partition): memory stays low whatever the table's size
 * (`npm run bench -- table`, 1,000,000 events, build rate against replay's and peak RSS: 1 MiB
 * 0.43-0.48 and 178-183 MB, 2 MiB 0.51-0.52 and 195-201 MB, 4 MiB 0.50-0.52 and 214-224 MB).
 */
const FETCH_MAX_BYTES = 2 * 1024 * 1024;
const RETRY_POLICY = { ...defaultRetryPolicy, initialDelayMs: 500, maxDelayMs: 30_000 };

interface Position {
  /** Partition → next offset to read. */
  next: Map<number, bigint>;
  /** Partition → first offset in the log and end offset, as last read. */
  ends: Map<number, { low: bigint; high: bigint }>;
}

/** Opens the store at `config.dbPath` and starts following the topic into it. */
export async function openAlertTable(
  config: AlertTableConfig,
  { logger = silentLogger(), metrics: metricsRegistry = new Registry() }: AlertTableOptions = {},
): Promise<AlertTable> {
  const log = logger.child({ component: 'table' });
  const topic = config.alertsTopic;
  let store = openStore(config, log);
  const position: Position = { next: store.offsets(), ends: new Map() };
  const offsetLag = (): number => {
    let lag = 0n;
    for (const [partition, { low, high }] of position.ends) {
      // Offsets below the first one still in the log are gone: nothing to read there.
      let from = position.next.get(partition) ?? low;
      if (from < low) from = low;
      if (high > from) lag += high - from;
    }
    return Number(lag);
  };
  const metrics = createTableMetrics(metricsRegistry, () => ({ offsetLag: offsetLag(), rows: store.rows() }));
  let readiness: { ready: boolean; reason?: string } = { ready: false, reason: 'connecting to Kafka' };
  const firstCatchUp = Promise.withResolvers<void>();
  firstCatchUp.promise.catch(() => {});
  const stopping = new AbortController();

  const rebuild = (why: string) => {
    log.warn({ dbPath: config.dbPath, why }, 'rebuilding the alert table from the start of the topic');
    store.close();
    deleteStoreFiles(config.dbPath);
    store = openAlertStore(config.dbPath);
    position.next = new Map();
  };

  /**
   * Rebuilds a store built from another topic or cluster, or ahead of the topic (one recreated since).
   * A store that fails meanwhile is the one failure not ridden out: OutputError.
   */
  const checkOrigin = (clusterId: string, ends: Position['ends']) => {
    try {
      rebuildIfForeign(clusterId, ends);
    } catch (err) {
      throw new OutputError(`the alert table's store ${config.dbPath} cannot be rebuilt`, { cause: err });
    }
  };
  const rebuildIfForeign = (clusterId: string, ends: Position['ends']) => {
    const origin = store.origin();
    const ahead = [...store.offsets()].find(([p, next]) => next > (ends.get(p)?.high ?? -1n));
    if (origin && origin.topic !== topic) rebuild(`the store holds topic ${origin.topic}`);
    else if (origin && origin.clusterId !== clusterId) rebuild(`the store holds cluster ${origin.clusterId}`);
    else if (ahead) rebuild(`the store is ahead of partition ${ahead[0]}: the topic was recreated`);
    else if (!origin && store.offsets().size > 0) rebuild('the store names no origin');
    if (!store.origin()) store.setOrigin({ topic, clusterId });
  };

  const decode = alertEventDecoder(createSchemaRegistry(config.registry), topic);
  const pending = new PendingSteps();
  /** Writes what is held, in one transaction: lookups see it from now on. */
  const writePending = () => {
    if (pending.empty) return;
    try {
      store.apply(pending.drain(), Date.now());
      store.commit();
    } catch (err) {
      throw new OutputError(`writing the alert table to ${config.dbPath} failed`, { cause: err });
    }
  };
  const onSkipped = (skipped: SkippedRecord) => {
    metrics.recordsSkipped.inc();
    if (skipped.reason === 'undecodable') {
      warnSkipped(log, skipped.record, skipped.error);
      return;
    }
    // A batch that does not decompress is the topic's problem, not the table's: set aside.
    log.warn(
      { partition: skipped.record.partition, ...skipped.record.unreadableBatch },
      'skipping a record batch that cannot be read: the state of the IBANs its records changed may be out of date',
    );
  };
  const applyRecords = async (records: IncomingRecord[]) => {
    for (let from = 0; from < records.length; from += CHUNK_RECORDS) {
      if (from > 0) await yieldToLookups();
      const step = records.slice(from, from + CHUNK_RECORDS);
      const { events, partition, next } = await holdStep(pending, step, decode, onSkipped);
      metrics.recordsRead.inc(step.length);
      metrics.eventsApplied.inc(events);
      if (next > (position.next.get(partition) ?? 0n)) position.next.set(partition, next);
      if (pending.ibans >= MAX_PENDING_IBANS) writePending();
    }
    if (readiness.ready || Date.now() - pending.since >= PENDING_MS) writePending();
  };

  const kafka = createKafkaClient({ config: config.kafka, logger });
  const session = (signal: AbortSignal) =>
    readSession({
      kafka,
      topic,
      signal,
      log,
      position,
      checkOrigin,
      applyRecords,
      onCaughtUp,
      onConnected: () => {
        readiness = { ready: false, reason: `catching up with ${topic}` };
      },
    });
  const onCaughtUp = () => {
    writePending();
    readiness = { ready: true };
    firstCatchUp.resolve();
    log.info({ rows: store.rows() }, 'the alert table has caught up with the topic');
  };
  const run = async () => {
    let attempt = 0;
    while (!stopping.signal.aborted) {
      if (readiness.ready) readiness = { ready: false, reason: 'connecting to Kafka' };
      try {
        await session(stopping.signal);
      } catch (err) {
        if (err instanceof OutputError) throw err;
        // The steps read so far are whole: kept, the next read starts after them.
        writePending();
        if (stopping.signal.aborted) break;
        attempt = readiness.ready ? 1 : attempt + 1;
        const delayMs = backoffDelay(attempt, RETRY_POLICY);
        readiness = { ready: false, reason: `reading ${topic} failed: ${(err as Error).message}` };
        log.warn({ err, attempt, delayMs }, 'reading the alerts topic failed; trying again');
        await sleep(delayMs, stopping.signal).catch(() => {});
      }
    }
    // Stopped: what was read is kept, so that a restart reads on from there.
    writePending();
  };
  const done = run().then(
    () => firstCatchUp.reject(new Error('the alert table was closed before it caught up')),
    (err: unknown) => {
      firstCatchUp.reject(err);
      readiness = { ready: false, reason: (err as Error).message };
      throw err;
    },
  );

  let closing: Promise<void> | undefined;
  const find = (raw: string): LookupResult => {
    if (typeof raw !== 'string' || raw.length > MAX_RAW_IBAN)
      return { iban: raw, alert: null, invalid: true };
    const iban = normalizeIban(raw);
    if (!isValidNormalizedIban(iban)) return { iban: raw, alert: null, invalid: true };
    return { iban: raw, alert: store.get(iban) ?? null };
  };
  // Bound once: a labelled inc() hashes its labels at every call.
  const lookupsBy = {
    hit: metrics.lookups.labels({ result: 'hit' }),
    miss: metrics.lookups.labels({ result: 'miss' }),
    invalid: metrics.lookups.labels({ result: 'invalid' }),
  };
  const count = (result: LookupResult) =>
    (result.invalid ? lookupsBy.invalid : result.alert ? lookupsBy.hit : lookupsBy.miss).inc();

  return {
    get(iban) {
      const started = performance.now();
      const result = find(iban);
      count(result);
      metrics.lookupSeconds.observe((performance.now() - started) / 1000);
      return result.alert;
    },
    lookup(ibans) {
      const started = performance.now();
      const results = ibans.map(find);
      for (const result of results) count(result);
      metrics.lookupSeconds.observe((performance.now() - started) / 1000);
      return results;
    },
    list({ qualification, updatedAfter, limit = DEFAULT_PAGE, cursor }) {
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      const page = store.page({
        limit: Math.min(Math.max(1, limit), MAX_PAGE),
        ...(after !== undefined && { after }),
        ...(qualification !== undefined && { qualification }),
        ...(updatedAfter !== undefined && { updatedAfter }),
      });
      return {
        alerts: page.alerts,
        nextCursor: page.lastIban === undefined ? null : encodeCursor(page.lastIban),
      };
    },
    caughtUp: () => firstCatchUp.promise,
    status: () => ({
      ...readiness,
      offsetLag: offsetLag(),
      updatedAt: store.updatedAt(),
      rows: store.rows(),
    }),
    done,
    close() {
      closing ??= (async () => {
        stopping.abort();
        await done.catch(() => {});
        store.close();
      })();
      return closing;
    },
  };
}

/** The store at `dbPath`; one of another topic is rebuilt at once (the cluster is checked once connected). */
function openStore(config: AlertTableConfig, log: Logger): AlertStore {
  let store: AlertStore;
  try {
    store = openAlertStore(config.dbPath);
  } catch (err) {
    throw new OutputError(`the alert table's store ${config.dbPath} cannot be opened`, { cause: err });
  }
  const origin = store.origin();
  if (origin && origin.topic !== config.alertsTopic) {
    log.warn(
      { dbPath: config.dbPath, why: `the store holds topic ${origin.topic}` },
      'rebuilding the alert table from the start of the topic',
    );
    store.close();
    deleteStoreFiles(config.dbPath);
    store = openAlertStore(config.dbPath);
  }
  return store;
}

interface SessionParts {
  kafka: KafkaClient;
  topic: string;
  signal: AbortSignal;
  log: Logger;
  position: Position;
  checkOrigin(clusterId: string, ends: Position['ends']): void;
  applyRecords(records: IncomingRecord[]): Promise<void>;
  onConnected(): void;
  onCaughtUp(): void;
}

/**
 * One read of the topic, from the store's offsets, followed until `signal` aborts (then resolves);
 * any failure rejects, for the caller to start another after a backoff.
 */
async function readSession(parts: SessionParts): Promise<void> {
  const { kafka, topic, signal, log, position } = parts;
  const admin: KafkaAdmin = await kafka.admin({ signal });
  let polling: NodeJS.Timeout | undefined;
  try {
    const readEnds = async () => {
      const offsets = await admin.topicOffsets(topic);
      position.ends = new Map(
        offsets.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]),
      );
    };
    const { clusterId } = await unlessAborted(admin.describeCluster(), signal, 'describing the cluster');
    await unlessAborted(readEnds(), signal, `reading the end offsets of ${topic}`);
    parts.checkOrigin(clusterId, position.ends);
    parts.onConnected();
    const startOffsets = new Map(position.next);
    let reading = false;
    polling = setInterval(() => {
      if (reading) return;
      reading = true;
      readEnds()
        .catch(() => {})
        .finally(() => {
          reading = false;
        });
    }, LAG_POLL_MS);
    log.info(
      {
        topic,
        startOffsets: Object.fromEntries([...startOffsets].map(([p, next]) => [p, next.toString()])),
      },
      'reading the alerts topic from the stored offsets',
    );
    await kafka.readTopic(topic, parts.applyRecords, {
      follow: true,
      signal,
      startOffsets,
      fetchMaxBytes: FETCH_MAX_BYTES,
      deliverUnreadableBatches: true,
      onPosition: (partition, next) => {
        if (next > (position.next.get(partition) ?? 0n)) position.next.set(partition, next);
      },
      onCaughtUp: parts.onCaughtUp,
    });
  } finally {
    clearInterval(polling);
    await admin.close();
  }
}
