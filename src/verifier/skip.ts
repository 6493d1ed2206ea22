import type { VerifierSkipConfig } from '../config/index.ts';
import { KafkaError, UsageError } from '../errors.ts';
import {
  fitForDlq,
  type IncomingRecord,
  type KafkaAdmin,
  type KafkaClient,
  type OutgoingRecord,
  type RecordFrom,
} from '../kafka/index.ts';
import type { Logger } from '../logger.ts';

/** The DLQ `error-code` of a record an operator moved past with `verifier skip`. */
export const OPERATOR_SKIPPED = 'OPERATOR_SKIPPED';

/** Header of a skipped record's DLQ copy when the record itself could not be read: why not. */
export const SOURCE_UNREADABLE_HEADER = 'source-unreadable';

/** How long the record is waited for before it counts as unreadable. */
const READ_TIMEOUT_MS = 30_000;

export interface SkipRequest {
  partition: number;
  /** The offset of the record to move past, in decimal. */
  offset: string;
  /** Why: the DLQ copy's `error-message`. */
  reason: string;
}

export type SkipOutcome =
  | {
      kind: 'skipped';
      /** The group's committed offset now: the one after the skipped record. */
      committed: string;
      /** False when the record could not be read: its DLQ copy is then empty, with a header saying why. */
      readable: boolean;
      /** Set when the DLQ copy was cut down to the DLQ topic's max.message.bytes: its original bytes. */
      truncatedFrom?: number;
    }
  | { kind: 'already-past'; committed: string };

export interface SkipDeps {
  kafka: KafkaClient;
  config: VerifierSkipConfig;
  logger: Logger;
  signal?: AbortSignal;
  now?: () => number;
  readTimeoutMs?: number;
}

/** Refuses while any member is in the group: a running verifier would be committing the same offsets. */
async function requireStoppedGroup(admin: KafkaAdmin, groupId: string): Promise<void> {
  const { state, members } = await admin.describeGroup(groupId);
  if (members.length === 0) return;
  throw new UsageError(
    `consumer group ${groupId} has ${members.length} active member(s) (state ${state}): stop every ` +
      'verifier of the group (scale it to 0) and run the command again',
  );
}

/** Where the group reads `partition` from next: its committed offset, or with none the partition's first. */
async function groupPosition(
  admin: KafkaAdmin,
  config: VerifierSkipConfig,
  partition: number,
): Promise<{ position: bigint; committed: string | undefined }> {
  const partitions = await admin.topicOffsets(config.requestsTopic);
  const low = partitions.find((p) => p.partition === partition)?.low;
  if (low === undefined) {
    throw new UsageError(`topic ${config.requestsTopic} has no partition ${partition}`);
  }
  const offsets = await admin.groupOffsets(config.groupId, config.requestsTopic);
  const committed = offsets.find((o) => o.partition === partition)?.offset;
  const has = committed !== undefined && BigInt(committed) >= 0n;
  return { position: has ? BigInt(committed) : BigInt(low), committed: has ? committed : undefined };
}

/**
 * The record the group would read next must be the one named: skipping a later one would leave the
 * records before it unanswered, and one that is not there would skip nothing. The record's own
 * content when readable; when not, only the group's exact position may be skipped.
 */
export function checkNamed(
  read: RecordFrom,
  position: bigint,
  { partition, offset }: SkipRequest,
  topic: string,
): IncomingRecord | { unreadable: string } {
  const target = BigInt(offset);
  const at = `${topic} partition ${partition}`;
  if (read.kind === 'end') {
    throw new UsageError(
      `no record at offset ${offset} of ${at}: the group reads from offset ${position} and the ` +
        `partition's committed records end before offset ${read.end}`,
    );
  }
  if (read.kind === 'unreadable') {
    if (target === position) return { unreadable: read.reason };
    throw new UsageError(
      `the record at the group's position (offset ${position} of ${at}) cannot be read ` +
        `(${read.reason}): it is the one to skip, not offset ${offset}`,
    );
  }
  const found = BigInt(read.record.offset);
  if (found < target) {
    throw new UsageError(
      `the group's next record on ${at} is at offset ${found}, before ${offset}: skipping ${offset} ` +
        `would leave it unanswered; skip offset ${found} (or let the verifier answer it) first`,
    );
  }
  if (found > target) {
    throw new UsageError(
      `offset ${offset} of ${at} holds no record (a transaction marker, or an aborted or deleted ` +
        `record); the group's next record is at offset ${found}`,
    );
  }
  return read.record;
}

/** The DLQ copy: the record as it was (or an empty value naming why it could not be read), and why it is there. */
export function dlqCopy(
  source: IncomingRecord | { unreadable: string },
  config: VerifierSkipConfig,
  request: SkipRequest,
  observedAt: number,
): OutgoingRecord {
  const why = {
    'error-code': OPERATOR_SKIPPED,
    'error-message': request.reason,
    'source-topic': config.requestsTopic,
    'source-partition': String(request.partition),
    'source-offset': request.offset,
    'observed-at': new Date(observedAt).toISOString(),
  };
  if ('unreadable' in source) {
    return {
      topic: config.dlqTopic,
      key: null,
      value: Buffer.alloc(0),
      headers: { ...why, [SOURCE_UNREADABLE_HEADER]: source.unreadable },
    };
  }
  const headers: Record<string, Buffer | string> = {};
  for (const [name, value] of Object.entries(source.headers)) if (value !== undefined) headers[name] = value;
  return { topic: config.dlqTopic, key: source.key, value: source.value, headers: { ...headers, ...why } };
}

/**
 * Moves the record at `request.offset` of the requests topic to the verifier's DLQ and commits the
 * verifier group's offset past it, in one Kafka transaction. Only while the group has no member;
 * only the record the group would read next; nothing when the group's committed offset is past it
 * already.
 */
export async function skipRecord(deps: SkipDeps, request: SkipRequest): Promise<SkipOutcome> {
  const { kafka, config, logger, signal } = deps;
  const now = deps.now ?? Date.now;
  const admin = await kafka.admin(signal && { signal });
  let copy: OutgoingRecord;
  let readable: boolean;
  try {
    await requireStoppedGroup(admin, config.groupId);
    const { position, committed } = await groupPosition(admin, config, request.partition);
    if (position > BigInt(request.offset)) {
      return { kind: 'already-past', committed: committed ?? String(position) };
    }
    const read = await kafka.readRecordFrom(config.requestsTopic, request.partition, position.toString(), {
      timeoutMs: deps.readTimeoutMs ?? READ_TIMEOUT_MS,
      ...(signal && { signal }),
    });
    const source = checkNamed(read, position, request, config.requestsTopic);
    readable = !('unreadable' in source);
    if ('unreadable' in source) {
      logger.warn(
        { partition: request.partition, offset: request.offset, reason: source.unreadable },
        'the record cannot be read: its DLQ copy is empty, with a header naming why',
      );
    }
    copy = fitForDlq(dlqCopy(source, config, request, now()), await admin.maxMessageBytes(config.dlqTopic));
    // Checked again just before the write: a verifier started meanwhile would commit the same offsets.
    await requireStoppedGroup(admin, config.groupId);
  } finally {
    await admin.close();
  }
  const committed = (BigInt(request.offset) + 1n).toString();
  const producer = await kafka.transactionalProducer({
    transactionalId: `${config.groupId}.verifier.skip`,
    ...(signal && { signal }),
  });
  try {
    await producer.transaction([copy], {
      consumerOffsets: {
        groupId: config.groupId,
        offsets: [{ topic: config.requestsTopic, partition: request.partition, offset: committed }],
      },
    });
  } catch (err) {
    throw new KafkaError(
      `moving offset ${request.offset} of ${config.requestsTopic} partition ${request.partition} to ` +
        `${config.dlqTopic} failed, nothing committed: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  } finally {
    await producer.close();
  }
  const truncated = copy.headers?.['dlq-truncated'];
  return {
    kind: 'skipped',
    committed,
    readable,
    ...(truncated !== undefined && { truncatedFrom: Number(truncated) }),
  };
}
