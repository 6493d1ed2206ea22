import { type AlertEvent, type AlertState, alertEventDecoder, warnSkipped } from '../alert-events.ts';
import type { KafkaConfig, RegistryConfig } from '../config/index.ts';
import { DecodeError, UnreadableBatchError } from '../errors.ts';
import {
  createKafkaClient,
  createSchemaRegistry,
  type IncomingRecord,
  type UnreadableBatch,
} from '../kafka/index.ts';
import { type Logger, silentLogger } from '../logger.ts';

export type { AlertState } from '../alert-events.ts';

export interface AlertChange extends AlertEvent {
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

  /** Applies a tombstone or an alert event to the table. */
  const apply = (record: IncomingRecord, event: AlertEvent): void | Promise<void> => {
    const { type, iban, alert } = event;
    // Almost always empty (only skipped records fill it): checked first, as this runs per record.
    if (result.uncertain.size > 0) result.uncertain.delete(iban);
    if (alert) result.alerts.set(iban, alert);
    else result.alerts.delete(iban);
    if (type === 'AlertDeactivated') result.deactivated++;
    result.events++;
    // Built only for a listener: the snapshot applies every record of the topic.
    if (live && options.onChange) {
      return options.onChange({ type, iban, alert, partition: record.partition, offset: record.offset });
    }
  };
  const decodeOne = alertEventDecoder(registry, config.alertsTopic);

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
        let event: AlertEvent;
        try {
          const decoding = decodeOne(record);
          event = decoding instanceof Promise ? await decoding : decoding;
        } catch (err) {
          // Only the record's own fault may be skipped; a registry outage ends or stalls the read.
          if (!options.skipUndecodable || !(err instanceof DecodeError)) throw err;
          result.skipped++;
          result.uncertain.add(record.key?.toString('utf8') ?? '');
          warnSkipped(logger, record, err);
          continue;
        }
        const changing = apply(record, event);
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
