import type { ConnectorConfig } from '../config/index.ts';
import { KafkaError } from '../errors.ts';
import {
  batchBytes,
  type KafkaClient,
  type OutgoingRecord,
  type ReadTopicOptions,
  type SchemaRegistryClient,
} from '../kafka/index.ts';
import type { Logger } from '../logger.ts';
import { loadSchema, SchemaNames } from '../schemas.ts';
import type { Batch, PublishSession } from './connector.ts';
import { type CursorRecord, parseCursorRecord, serializeCursorRecord } from './cursor.ts';
import type { AlertEncoders } from './prepare.ts';
import type { AlertEvent } from './rows.ts';

export type { AlertEncoders };

export function transactionalIdOf(name: string): string {
  return `${name}.connector`;
}

/** Registers both alert schemas under TopicRecordNameStrategy subjects of the alerts topic. */
export async function registerAlertSchemas(
  registry: SchemaRegistryClient,
  topic: string,
): Promise<AlertEncoders> {
  const [AlertUpserted, AlertDeactivated] = await Promise.all([
    registry.encoder<AlertEvent>(topic, loadSchema(SchemaNames.AlertUpserted)),
    registry.encoder<AlertEvent>(topic, loadSchema(SchemaNames.AlertDeactivated)),
  ]);
  return { AlertUpserted, AlertDeactivated };
}

/** An open transaction of a crashed instance is aborted by the broker after this long. */
const TRANSACTION_TIMEOUT_MS = 60_000;

/**
 * How long a cursor read waits for transactions left open on the offsets topic: the transaction
 * timeout, plus the 10 s between the broker's checks for expired transactions
 * (`transaction.abort.timed.out.transaction.cleanup.interval.ms`).
 */
const OPEN_TRANSACTIONS_WAIT_MS = TRANSACTION_TIMEOUT_MS + 10_000;

/**
 * The last cursor record for `name`, read (read_committed) to the offsets topic's high watermark.
 * The offsets topic is shared by every CONNECTOR_NAME: reading only to the last stable offset would
 * miss our own records committed after another connector's transaction still open (a connector
 * killed mid-transaction leaves one open up to its timeout), and resume from an older cursor.
 */
export async function readCursorRecord(
  kafka: KafkaClient,
  offsetsTopic: string,
  name: string,
  { logger, signal }: { logger?: Logger; signal?: AbortSignal } = {},
): Promise<CursorRecord | null> {
  let last: Buffer | null = null;
  const options: ReadTopicOptions = {
    ...(signal && { signal }),
    awaitOpenTransactions: {
      timeoutMs: OPEN_TRANSACTIONS_WAIT_MS,
      onWaiting: (ends) =>
        logger?.info({ topic: offsetsTopic, ends }, 'cursor read waits for transactions still open'),
    },
  };
  await kafka.readTopic(
    offsetsTopic,
    (records) => {
      for (const r of records) if (r.key?.toString('utf8') === name) last = r.value;
    },
    options,
  );
  return last === null ? null : parseCursorRecord(last);
}

export function cursorRecordOf(topic: string, name: string, cursor: CursorRecord): OutgoingRecord {
  return { topic, key: name, value: serializeCursorRecord(cursor), partition: 0 };
}

/**
 * Refuses a cursor record the offsets topic would not take: the broker's MESSAGE_TOO_LARGE names
 * neither the record nor what made it large, and is final, so the same commit would fail after
 * every restart.
 */
function checkCursorSize(record: OutgoingRecord, cursor: CursorRecord, maxBytes: number): void {
  const bytes = batchBytes([record]);
  if (bytes <= maxBytes) return;
  const after = cursor.rejectedAfterMark?.length ?? 0;
  throw new KafkaError(
    `the cursor record of ${cursor.connector} is ${bytes} bytes, over the max.message.bytes of ` +
      `${record.topic} (${maxBytes}): it holds ${cursor.rowsAtMark?.length ?? 0} rows at the ` +
      `high-water mark ${cursor.highWaterMarkIso}, ${cursor.rejectedAtMark.length} DLQ rows there ` +
      `and ${after} DLQ rows without a readable updatedAt after it; raise max.message.bytes on ` +
      'CONNECTOR_OFFSETS_TOPIC',
    { retriable: false },
  );
}

export interface SessionDeps {
  kafka: KafkaClient;
  config: Pick<ConnectorConfig, 'topics' | 'connector'>;
  logger: Logger;
  /**
   * The offsets topic's `max.message.bytes`, when records go uncompressed: a larger cursor record is
   * refused before its transaction starts. Unset, the broker judges (a compressed batch may fit).
   */
  cursorMaxBytes?: number;
  /** Ends the cursor read (AbortedError): SIGTERM while Kafka is away or a transaction is waited out. */
  signal?: AbortSignal;
}

/**
 * Opens a publish session: the transactional producer first (fencing any other instance and
 * settling the transaction it left open), then the cursor as committed, to the high watermark.
 */
export async function openKafkaSession(deps: SessionDeps): Promise<PublishSession> {
  const { topics, connector } = deps.config;
  const producer = await deps.kafka.transactionalProducer({
    transactionalId: transactionalIdOf(connector.name),
    transactionTimeoutMs: TRANSACTION_TIMEOUT_MS,
    // A backlog commits one transaction right after another from this one producer: on protocol v2
    // each would wait out the broker's 20 ms retry while the last one's markers are written
    // (src/kafka/README.md). The bench's bare producer on fraudlink's kafkajs lost ~25% that way.
    transactionProtocol: 'v1',
  });
  let cursor: CursorRecord | null;
  try {
    cursor = await readCursorRecord(deps.kafka, topics.offsetsTopic, connector.name, {
      logger: deps.logger,
      ...(deps.signal && { signal: deps.signal }),
    });
  } catch (err) {
    await producer.close().catch(() => {});
    throw err;
  }
  const toRecords = (batch: Batch, cursorRecord: OutgoingRecord): OutgoingRecord[] => {
    const records: OutgoingRecord[] = new Array(batch.events.length);
    for (let i = 0; i < batch.events.length; i++) {
      const { type, key, value, eventId, alertId } = batch.events[i] as Batch['events'][number];
      records[i] = {
        topic: topics.alertsTopic,
        key,
        value,
        headers: { 'event-type': type, 'event-id': eventId, 'alert-id': alertId },
      };
    }
    for (const r of batch.rejected) {
      records.push({
        topic: topics.alertsDlqTopic,
        key: r.id,
        value: Buffer.from(r.raw, 'utf8'),
        headers: {
          'error-code': r.code,
          'error-message': r.message,
          source: 'export',
          'observed-at': new Date(r.observedAt).toISOString(),
        },
      });
    }
    records.push(cursorRecord);
    return records;
  };
  return {
    cursor,
    async commit(batch) {
      const cursorRecord = cursorRecordOf(topics.offsetsTopic, connector.name, batch.cursor);
      if (deps.cursorMaxBytes !== undefined) checkCursorSize(cursorRecord, batch.cursor, deps.cursorMaxBytes);
      await producer.transaction(toRecords(batch, cursorRecord));
    },
    close: () => producer.close(),
  };
}
