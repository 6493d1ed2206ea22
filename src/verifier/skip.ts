import type { VerifierSkipConfig } from '../config/index.ts';
import { KafkaError, UsageError } from '../errors.ts';
import { DLQ_KEPT_HEADERS } from '../kafka/dlq.ts';
import {
  fitForDlq,
  type IncomingRecord,
  type KafkaAdmin,
  type KafkaClient,
  type OutgoingRecord,
  type RecordFrom,
  type UnreadableBatch,
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
      /** False when the record could not be read: its DLQ copy then names why in `source-unreadable`. */
      readable: boolean;
      /** Set when the offset lay in a record batch that cannot be read: the whole batch was moved past. */
      batch?: { firstOffset: string; lastOffset: string };
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
 * What is moved past: a record; an unreadable record batch (the one record standing for it: moving
 * past it moves past the whole batch); or, when the read failed, the offset alone.
 */
export type SkipTarget =
  | { kind: 'record'; record: IncomingRecord }
  | { kind: 'batch'; batch: UnreadableBatch }
  | { kind: 'unreadable'; reason: string };

/**
 * The record the group would read next must be the one named: skipping a later one would leave the
 * records before it unanswered, and one that is not there would skip nothing. An unreadable batch is
 * named by any of its offsets; when the read failed, only the group's exact position may be skipped.
 */
export function checkNamed(
  read: RecordFrom,
  position: bigint,
  { partition, offset }: SkipRequest,
  topic: string,
): SkipTarget {
  const target = BigInt(offset);
  const at = `${topic} partition ${partition}`;
  if (read.kind === 'end') {
    throw new UsageError(
      `no record at offset ${offset} of ${at}: the group reads from offset ${position} and the ` +
        `partition's committed records end before offset ${read.end}`,
    );
  }
  if (read.kind === 'unreadable') {
    if (target === position) return { kind: 'unreadable', reason: read.reason };
    throw new UsageError(
      `the record at the group's position (offset ${position} of ${at}) cannot be read ` +
        `(${read.reason}): it is the one to skip, not offset ${offset}`,
    );
  }
  const batch = read.record.unreadableBatch;
  const first = BigInt(batch?.firstOffset ?? read.record.offset);
  const last = BigInt(read.record.offset);
  const next =
    first === last ? `a record at offset ${last}` : `an unreadable batch at offsets ${first} to ${last}`;
  if (last < target) {
    throw new UsageError(
      `the group's next record on ${at} is ${next}, before ${offset}: skipping ${offset} would leave ` +
        `it unanswered; skip offset ${first} (or let the verifier answer it) first`,
    );
  }
  if (batch) return { kind: 'batch', batch };
  if (last > target) {
    throw new UsageError(
      `offset ${offset} of ${at} holds no record (a transaction marker, or an aborted or deleted ` +
        `record); the group's next record is at offset ${last}`,
    );
  }
  return { kind: 'record', record: read.record };
}

/** The offset the group commits once `target` is moved past. */
export function offsetAfter(target: SkipTarget, request: SkipRequest): string {
  const last = target.kind === 'batch' ? target.batch.lastOffset : request.offset;
  return (BigInt(last) + 1n).toString();
}

/**
 * The DLQ copy: the record as it was; an unreadable batch's compressed records with its offsets and
 * codec; or, when the read failed, an empty value. Each with why it is there, and where it came from.
 */
export function dlqCopy(
  target: SkipTarget,
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
  const copy = { topic: config.dlqTopic, key: null, value: Buffer.alloc(0) };
  if (target.kind === 'unreadable') {
    return { ...copy, headers: { ...why, [SOURCE_UNREADABLE_HEADER]: target.reason } };
  }
  if (target.kind === 'batch') {
    const { batch } = target;
    return {
      ...copy,
      value: batch.data,
      headers: {
        ...why,
        'source-offset-first': batch.firstOffset,
        'source-offset-last': batch.lastOffset,
        'source-codec': batch.codec,
        [SOURCE_UNREADABLE_HEADER]: batch.reason,
      },
    };
  }
  const { record } = target;
  const headers: Record<string, Buffer | string> = {};
  for (const [name, value] of Object.entries(record.headers)) if (value !== undefined) headers[name] = value;
  return { ...copy, key: record.key, value: record.value, headers: { ...headers, ...why } };
}

/** The copy as it fits the DLQ topic: compressed bytes are left out whole rather than cut. */
const fitted = (copy: OutgoingRecord, target: SkipTarget, maxBytes: number): OutgoingRecord =>
  fitForDlq(copy, maxBytes, {
    keep: [...DLQ_KEPT_HEADERS, SOURCE_UNREADABLE_HEADER],
    ...(target.kind === 'batch' && { value: 'drop' as const }),
  });

/**
 * Moves the record at `request.offset` of the requests topic to the verifier's DLQ and commits the
 * verifier group's offset past it, in one Kafka transaction. Nothing when the group's committed
 * offset is past it already; otherwise only while the group has no member, and only the record the
 * group would read next.
 */
export async function skipRecord(deps: SkipDeps, request: SkipRequest): Promise<SkipOutcome> {
  const { kafka, config, logger, signal } = deps;
  const now = deps.now ?? Date.now;
  const admin = await kafka.admin(signal && { signal });
  let copy: OutgoingRecord;
  let target: SkipTarget;
  try {
    // Nothing to do, whoever is in the group: committed offsets only move forward.
    const { position, committed } = await groupPosition(admin, config, request.partition);
    if (position > BigInt(request.offset)) {
      return { kind: 'already-past', committed: committed ?? String(position) };
    }
    await requireStoppedGroup(admin, config.groupId);
    const read = await kafka.readRecordFrom(config.requestsTopic, request.partition, position.toString(), {
      timeoutMs: deps.readTimeoutMs ?? READ_TIMEOUT_MS,
      ...(signal && { signal }),
    });
    target = checkNamed(read, position, request, config.requestsTopic);
    if (target.kind !== 'record') {
      const reason = target.kind === 'batch' ? target.batch.reason : target.reason;
      logger.warn(
        { partition: request.partition, offset: request.offset, reason },
        'the record cannot be read: its DLQ copy names why',
      );
    }
    const copyOf = dlqCopy(target, config, request, now());
    copy = fitted(copyOf, target, await admin.maxMessageBytes(config.dlqTopic));
    // Checked again just before the write: a verifier started meanwhile would commit the same offsets.
    await requireStoppedGroup(admin, config.groupId);
  } finally {
    await admin.close();
  }
  const committed = offsetAfter(target, request);
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
    readable: target.kind === 'record',
    ...(target.kind === 'batch' && {
      batch: { firstOffset: target.batch.firstOffset, lastOffset: target.batch.lastOffset },
    }),
    ...(truncated !== undefined && { truncatedFrom: Number(truncated) }),
  };
}
