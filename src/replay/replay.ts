import type { KafkaConfig, RegistryConfig } from '../config/index.ts';
import { DecodeError, SchemaRegistryError, UnreadableBatchError } from '../errors.ts';
import {
  createKafkaClient,
  createSchemaRegistry,
  type Decoded,
  type IncomingRecord,
  type UnreadableBatch,
} from '../kafka/index.ts';
import { type Logger, maskIban, silentLogger } from '../logger.ts';
import { SchemaNames } from '../schemas.ts';

/** An alert as its last AlertUpserted says (Avro field names; instants as epoch ms). */
export interface AlertState {
  eventId: string;
  alertId: string;
  iban: string;
  bic: string | null;
  qualification: string;
  qualificationRaw: string | null;
  reportsCount: number;
  updatedAt: number;
  observedAt: number;
}

export interface AlertChange {
  type: 'AlertUpserted' | 'AlertDeactivated' | 'Tombstone';
  iban: string;
  /** The new state, or null when the alert was removed. */
  alert: AlertState | null;
  partition: number;
  offset: string;
}

export interface ReplayConfig {
  kafka: KafkaConfig;
  registry: RegistryConfig;
  alertsTopic: string;
}

export interface ReplayOptions {
  logger?: Logger;
  signal?: AbortSignal;
  /** Skip (and count) records that cannot be decoded instead of stopping. */
  skipUndecodable?: boolean;
  /** Go on applying new events after the snapshot, until `signal` aborts. */
  follow?: boolean;
  /** Called with the table once the end offsets taken at start are reached. */
  onSnapshot?: (
    table: ReadonlyMap<string, AlertState>,
    counts: { events: number; deactivated: number; skipped: number; uncertain: number },
  ) => void;
  /**
   * Called for every change applied after the snapshot (follow mode). A promise it returns is awaited
   * before the next record: a slow reader of the changes holds the read back instead of buffering.
   */
  onChange?: (change: AlertChange) => void | Promise<void>;
  onProgress?: (progress: { read: bigint; total: bigint }) => void;
}

export interface ReplayResult {
  alerts: Map<string, AlertState>;
  events: number;
  deactivated: number;
  skipped: number;
  /**
   * Record batches skipped as unreadable (`skipUndecodable`), each counted once in `skipped`: which
   * IBANs their records changed is unknown.
   */
  unreadableBatches: { partition: number; firstOffset: string; lastOffset: string; codec: string }[];
  /**
   * IBANs whose latest record was skipped (`skipUndecodable`): the table holds their state before it
   * (or none), which that record may have changed.
   */
  uncertain: Set<string>;
}

const ALERT_EVENTS = new Set<string>([SchemaNames.AlertUpserted, SchemaNames.AlertDeactivated]);

/**
 * Rebuilds the current alert table from the compacted alerts topic: the last AlertUpserted per IBAN,
 * removed by a later AlertDeactivated or a tombstone. Memory follows the number of live alerts.
 */
export async function replayAlerts(config: ReplayConfig, options: ReplayOptions = {}): Promise<ReplayResult> {
  const logger = options.logger ?? silentLogger();
  const kafka = createKafkaClient({ config: config.kafka, logger });
  const registry = createSchemaRegistry(config.registry);
  const result: ReplayResult = {
    alerts: new Map(),
    events: 0,
    deactivated: 0,
    skipped: 0,
    unreadableBatches: [],
    uncertain: new Set(),
  };
  let live = false;

  /** Applies a tombstone or an alert event (other schemas were refused when decoded). */
  const apply = (record: IncomingRecord, decoded: Decoded | null): void | Promise<void> => {
    const iban = record.key?.toString('utf8') ?? '';
    // Almost always empty (only skipped records fill it): checked first, as this runs per record.
    if (result.uncertain.size > 0) result.uncertain.delete(iban);
    let type: AlertChange['type'];
    let alert: AlertState | null = null;
    if (decoded === null) {
      type = 'Tombstone';
      result.alerts.delete(iban);
    } else if (decoded.name === SchemaNames.AlertUpserted) {
      type = 'AlertUpserted';
      alert = decoded.value as unknown as AlertState;
      result.alerts.set(iban, alert);
    } else {
      type = 'AlertDeactivated';
      result.alerts.delete(iban);
      result.deactivated++;
    }
    result.events++;
    // Built only for a listener: the snapshot applies every record of the topic.
    if (live && options.onChange) {
      return options.onChange({ type, iban, alert, partition: record.partition, offset: record.offset });
    }
  };

  const undecodable = (record: IncomingRecord, err: unknown): Error =>
    // A registry that cannot be reached says nothing about the record: never skip it as undecodable.
    err instanceof SchemaRegistryError
      ? err
      : new DecodeError(
          `${config.alertsTopic} partition ${record.partition} offset ${record.offset} cannot be decoded: ${(err as Error).message}`,
          { cause: err },
        );

  /**
   * The record's value decoded, null for a tombstone; a promise only when its schema must be fetched
   * first. Almost every record takes the synchronous path: no promise and no await per record.
   */
  const decodeOne = (record: IncomingRecord): Decoded | null | Promise<Decoded> => {
    const { value } = record;
    if (value === null) return null;
    try {
      const cached = registry.decodeCached(value);
      if (cached) return cached;
    } catch (err) {
      throw undecodable(record, err);
    }
    return registry.decode(value).catch((err: unknown) => {
      throw undecodable(record, err);
    });
  };

  /** A batch of the topic that cannot be read: skipped with `skipUndecodable`, else the read's end. */
  const unreadable = (record: IncomingRecord, batch: UnreadableBatch): void => {
    const err = new UnreadableBatchError({ ...batch, topic: record.topic, partition: record.partition });
    if (!options.skipUndecodable) throw err;
    result.skipped++;
    result.unreadableBatches.push({
      partition: record.partition,
      firstOffset: batch.firstOffset,
      lastOffset: batch.lastOffset,
      codec: batch.codec,
    });
    logger.warn(
      {
        err,
        topic: record.topic,
        partition: record.partition,
        firstOffset: batch.firstOffset,
        lastOffset: batch.lastOffset,
        codec: batch.codec,
      },
      'skipping a record batch that cannot be read: the state of the IBANs its records changed may be out of date',
    );
  };

  await kafka.readTopic(
    config.alertsTopic,
    async (records) => {
      for (const record of records) {
        if (record.unreadableBatch) {
          unreadable(record, record.unreadableBatch);
          continue;
        }
        let decoded: Decoded | null;
        try {
          const decoding = decodeOne(record);
          decoded = decoding instanceof Promise ? await decoding : decoding;
          if (decoded !== null && !ALERT_EVENTS.has(decoded.name)) {
            // A record of another schema (a future event type, a message on the wrong topic) is not
            // an alert event: skippable like an undecodable one.
            throw new DecodeError(
              `${config.alertsTopic} partition ${record.partition} offset ${record.offset} holds a ${decoded.name}, not an alert event`,
            );
          }
        } catch (err) {
          // Only the record's own fault may be skipped; a registry outage ends or stalls the read.
          if (!options.skipUndecodable || !(err instanceof DecodeError)) throw err;
          result.skipped++;
          const iban = record.key?.toString('utf8') ?? '';
          result.uncertain.add(iban);
          logger.warn(
            { err, partition: record.partition, offset: record.offset, iban: maskIban(iban) },
            "skipping an undecodable record: this IBAN's state in the table may be out of date",
          );
          continue;
        }
        const changing = apply(record, decoded);
        if (changing) await changing;
      }
    },
    {
      ...(options.signal && { signal: options.signal }),
      ...(options.follow && { follow: true }),
      deliverUnreadableBatches: true,
      ...(options.onProgress && { onProgress: options.onProgress }),
      onCaughtUp: () => {
        live = true;
        options.onSnapshot?.(result.alerts, {
          events: result.events,
          deactivated: result.deactivated,
          skipped: result.skipped,
          uncertain: result.uncertain.size,
        });
      },
    },
  );
  return result;
}
