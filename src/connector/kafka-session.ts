import type { ConnectorConfig } from '../config/index.ts';
import { AbortedError, ErrorCodes, findError, KafkaError } from '../errors.ts';
import {
  batchBytes,
  fitForDlq,
  type KafkaClient,
  type OutgoingRecord,
  type ReadTopicOptions,
  type SchemaRegistryClient,
} from '../kafka/index.ts';
import type { Logger } from '../logger.ts';
import { unlessAborted } from '../retry.ts';
import { loadSchema, SchemaNames } from '../schemas.ts';
import type { Batch, PublishSession } from './connector.ts';
import { type CursorRecord, CursorTracker, parseCursorRecord, serializeCursorRecord } from './cursor.ts';

import { type AlertEncoders, eventRecord } from './prepare.ts';
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
 *
 * A tombstone (null value) deletes the cursor: null, as on a first run, as the topic's compaction
 * would make it anyway once it drops the tombstone and the records before it. Then the connector
 * starts from EXPORT_START, so it is logged as a warning.
 */
export async function readCursorRecord(
  kafka: KafkaClient,
  offsetsTopic: string,
  name: string,
  { logger, signal }: { logger?: Logger; signal?: AbortSignal } = {},
): Promise<CursorRecord | null> {
  let last: Buffer | null = null;
  let lastOffset = '';
  let records = 0;
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
    (batch) => {
      for (const r of batch) {
        if (r.key?.toString('utf8') !== name) continue;
        last = r.value;
        lastOffset = r.offset;
        records++;
      }
    },
    options,
  );
  if (records > 0 && last === null) {
    logger?.warn(
      { topic: offsetsTopic, offset: lastOffset, earlierRecords: records - 1 },
      `the cursor record of ${name} was deleted (a tombstone): starting as on a first run, from ` +
        'EXPORT_START; `connector reset` is the way to move a cursor',
    );
  }
  return last === null ? null : parseCursorRecord(last);
}

/**
 * Writes a new cursor record for `name` (a deliberate replay from `start`), keeping the stored
 * record's counters. Its producer has the connector's transactional id, so creating it fences a
 * running connector. A stored record that cannot be read is what a reset may be for: it is replaced
 * all the same, counters from zero, with a warning naming the problem. `signal` aborts it (AbortedError)
 * until the write begins, leaving the stored record as it was (a running connector may be fenced).
 */
export async function resetCursorRecord(
  kafka: KafkaClient,
  offsetsTopic: string,
  name: string,
  start: 'earliest' | Date,
  logger: Logger,
  signal?: AbortSignal,
): Promise<CursorRecord> {
  const creating = kafka.transactionalProducer({ transactionalId: transactionalIdOf(name) });
  const producer = await unlessAborted(creating, signal, 'connecting the cursor writer').catch((err) => {
    // One that connects after the abort is closed then.
    if (signal?.aborted) void creating.then((late) => late.close()).catch(() => {});
    throw err;
  });
  try {
    let previous: CursorRecord | null = null;
    try {
      previous = await readCursorRecord(kafka, offsetsTopic, name, { logger, ...(signal && { signal }) });
    } catch (err) {
      if (!findError(err, ErrorCodes.DECODE_FAILED)) throw err;
      logger.warn(
        { err, topic: offsetsTopic },
        `the stored cursor record of ${name} cannot be read; reset replaces it, counters from zero`,
      );
    }
    const record = CursorTracker.initial(name, start).snapshot();
    if (previous) record.counters = previous.counters;
    // Not aborted once under way: the write is one short transaction.
    if (signal?.aborted) throw new AbortedError('cursor reset aborted before the write');
    await producer.transaction([cursorRecordOf(offsetsTopic, name, record)]);
    return record;
  } finally {
    await producer.close();
  }
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
  /**
   * The alerts DLQ topic's `max.message.bytes`: a larger DLQ copy is cut down to it, with the
   * `dlq-truncated` header (fitForDlq). Unset, copies go whole.
   */
  dlqMaxBytes?: number;
  /**
   * Ends the producer's creation and the cursor read (AbortedError): SIGTERM while Kafka is away or a
   * transaction is waited out.
   */
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
    signal: deps.signal,
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
      records[i] = eventRecord(topics.alertsTopic, batch.events[i] as Batch['events'][number]);
    }
    for (const r of batch.rejected) {
      const copy: OutgoingRecord = {
        topic: topics.alertsDlqTopic,
        key: r.id,
        value: Buffer.from(r.raw, 'utf8'),
        headers: {
          'error-code': r.code,
          'error-message': r.message,
          source: 'export',
          'observed-at': new Date(r.observedAt).toISOString(),
        },
      };
      records.push(deps.dlqMaxBytes === undefined ? copy : fitForDlq(copy, deps.dlqMaxBytes));
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
