import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { AbortedError, FraudlinkError } from '../errors.ts';
import { toKafkaError } from './errors.ts';
import { toIncoming } from './records.ts';
import type { GroupConsumer, GroupConsumerOptions, IncomingRecord, KafkaAdmin } from './types.ts';

/** A consumer-group member; `start()` resolves once it has its first assignment and has fetched once. */
export function createGroupConsumer(kafka: Kafka, options: GroupConsumerOptions): GroupConsumer {
  const consumer = kafka.consumer({
    groupId: options.groupId,
    readUncommitted: options.isolation === 'read_uncommitted',
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 8 * 1024 * 1024,
    maxWaitTimeInMs: options.maxWaitMs ?? 100,
    // A member that died without leaving holds its partitions until the session times out: keep
    // that short so a restarted instance takes over within seconds.
    sessionTimeout: 10_000,
    heartbeatInterval: 1000,
    retry: { initialRetryTime: 100, retries: 10 },
  });
  let started: Promise<void> | undefined;
  return {
    start() {
      started ??= (async () => {
        // Joined and positioned: the first fetch after the join has resolved the start offsets, so a
        // record written from then on is seen even by a member that starts at the latest offset.
        const joined = new Promise<void>((resolve) => {
          let assigned = false;
          consumer.on(consumer.events.GROUP_JOIN, (event) => {
            const assignment = event.payload.memberAssignment as Record<string, number[]>;
            options.onAssignment?.(
              Object.entries(assignment).map(([topic, partitions]) => ({ topic, partitions })),
            );
            assigned = true;
            // A member with nothing assigned never fetches: it is ready as it is.
            if (Object.values(assignment).every((p) => p.length === 0)) resolve();
          });
          consumer.on(consumer.events.FETCH, () => {
            if (assigned) resolve();
          });
        });
        consumer.on(consumer.events.CRASH, (event) => {
          options.onCrash?.(toKafkaError(event.payload.error, `consumer ${options.groupId} crashed`));
        });
        try {
          await consumer.connect();
          await consumer.subscribe({ topics: options.topics, fromBeginning: options.fromBeginning ?? true });
          await consumer.run({
            autoCommit: options.autoCommit ?? false,
            partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
            eachBatch: async ({ batch, isRunning, isStale }) => {
              const records = batch.messages.map((m) => toIncoming(batch.topic, batch.partition, m));
              await options.eachBatch({
                topic: batch.topic,
                partition: batch.partition,
                records,
                isRunning,
                isStale,
              });
            },
          });
        } catch (err) {
          throw toKafkaError(err, `start consumer ${options.groupId}`);
        }
        await joined;
      })();
      return started;
    },
    async close() {
      await consumer.disconnect();
    },
  };
}

export interface ReadTopicOptions {
  signal?: AbortSignal;
  /** Keep applying records after the end taken at start. */
  follow?: boolean;
  /** Called once every partition has reached the end offsets taken at start. */
  onCaughtUp?: () => void;
  onProgress?: (progress: { read: bigint; total: bigint }) => void;
}

/**
 * Reads a topic from its beginning to the end offsets taken at start (read_committed), then stops,
 * or goes on with `follow`. "The end" is reached when the consumed position passes the last offset,
 * which may be a transaction marker or an aborted record that is never delivered.
 */
export async function readTopic(
  kafka: Kafka,
  admin: KafkaAdmin,
  topic: string,
  onRecords: (records: IncomingRecord[]) => void | Promise<void>,
  options: ReadTopicOptions = {},
): Promise<void> {
  if (options.signal?.aborted) throw new AbortedError('read aborted');
  const offsets = await admin.topicOffsets(topic);
  const remaining = new Map<number, bigint>();
  let total = 0n;
  for (const o of offsets) {
    const last = BigInt(o.high) - 1n;
    if (last >= BigInt(o.low)) {
      remaining.set(o.partition, last);
      total += BigInt(o.high) - BigInt(o.low);
    }
  }
  const firstOffset = new Map(offsets.map((o) => [o.partition, BigInt(o.low)]));
  let read = 0n;
  const consumer = kafka.consumer({
    groupId: `fraudlink-reader-${randomUUID()}`,
    readUncommitted: false,
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 16 * 1024 * 1024,
    maxWaitTimeInMs: 200,
    retry: { initialRetryTime: 100, retries: 10 },
  });
  let caughtUp!: () => void;
  let failed!: (err: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    caughtUp = resolve;
    failed = reject;
  });
  const position = new Map<number, bigint>();
  let stopped = false;
  const markEnd = (partition: number, lastOffset: string) => {
    const last = BigInt(lastOffset);
    const prev = position.get(partition) ?? (firstOffset.get(partition) ?? 0n) - 1n;
    if (last > prev) {
      position.set(partition, last);
      const target = remaining.get(partition);
      if (target !== undefined) read += (last < target ? last : target) - (prev < target ? prev : target);
      options.onProgress?.({ read, total });
    }
    const target = remaining.get(partition);
    if (target !== undefined && last >= target) {
      remaining.delete(partition);
      if (remaining.size === 0) caughtUp();
    }
  };
  consumer.on(consumer.events.END_BATCH_PROCESS, (event) => {
    markEnd(event.payload.partition, event.payload.lastOffset);
  });
  consumer.on(consumer.events.CRASH, (event) =>
    failed(toKafkaError(event.payload.error, `reading ${topic} failed`)),
  );
  const onAbort = () => failed(new AbortedError('read aborted'));
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0 || stopped) return;
        const records = new Array<IncomingRecord>(batch.messages.length);
        for (let i = 0; i < batch.messages.length; i++) {
          records[i] = toIncoming(batch.topic, batch.partition, batch.messages[i] as never);
        }
        try {
          await onRecords(records);
        } catch (err) {
          // The caller's failure ends the read as it is; kafkajs would only retry the batch.
          stopped = true;
          failed(err as Error);
        }
      },
    });
    if (remaining.size === 0) caughtUp();
    await done;
    options.onCaughtUp?.();
    if (options.follow) {
      await new Promise<void>((_resolve, reject) => {
        done.catch(reject);
        failed = reject;
        if (options.signal?.aborted) reject(new AbortedError('read aborted'));
      });
    }
  } catch (err) {
    if (err instanceof AbortedError && options.follow) return;
    throw err instanceof FraudlinkError ? err : toKafkaError(err, `reading ${topic} failed`);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await consumer.disconnect().catch(() => {});
  }
}
