import { randomUUID } from 'node:crypto';
import type { EachBatchPayload, Kafka } from 'kafkajs';
import { AbortedError, FraudlinkError } from '../errors.ts';
import { toKafkaError } from './errors.ts';
import { createReadProgress } from './read-progress.ts';
import { toIncoming } from './records.ts';
import type { IncomingRecord, KafkaAdmin, ReadTopicOptions } from './types.ts';

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/**
 * Reads a topic from its beginning to the end offsets taken at start (read_committed), then resolves;
 * with `follow`, goes on applying new records until the signal aborts (then resolves too). Without
 * `follow`, an abort rejects with AbortedError. A failure of `onRecords` ends the read with that error.
 *
 * kafkajs has no manual assignment, so the reader joins a throwaway consumer group and never commits:
 * the broker drops the group when the reader leaves. A rejoin (the member missed its session while
 * `onRecords` was slow) would restart such a group from the beginning: the reader seeks back to its
 * own position after every join, and skips offsets it has already delivered.
 */
export async function readTopic(
  kafka: Kafka,
  admin: KafkaAdmin,
  topic: string,
  onRecords: (records: IncomingRecord[]) => void | Promise<void>,
  options: ReadTopicOptions = {},
): Promise<void> {
  const { signal, follow = false } = options;
  const aborted = () => new AbortedError(`reading ${topic} aborted`);
  if (signal?.aborted) {
    if (follow) return;
    throw aborted();
  }
  const progress = createReadProgress(await admin.topicOffsets(topic));
  if (progress.caughtUp() && !follow) {
    options.onCaughtUp?.();
    return;
  }

  const stop = Promise.withResolvers<void>();
  // Attached at once: a failure during connect must not surface as an unhandled rejection.
  stop.promise.catch(() => {});
  let failed = false;
  let callerFailure: Error | undefined;
  const fail = (err: Error) => {
    failed = true;
    stop.reject(err);
  };
  let caughtUpSeen = false;
  const checkCaughtUp = () => {
    if (caughtUpSeen || !progress.caughtUp()) return;
    caughtUpSeen = true;
    try {
      options.onCaughtUp?.();
    } catch (err) {
      callerFailure = asError(err);
      fail(callerFailure);
      return;
    }
    if (!follow) stop.resolve();
  };
  const advance = (partition: number, lastOffset: string) => {
    if (!progress.advance(partition, lastOffset)) return;
    options.onProgress?.({ read: progress.read, total: progress.total });
    checkCaughtUp();
  };

  const eachBatch = async ({ batch }: EachBatchPayload): Promise<void> => {
    if (failed) return;
    const { messages } = batch;
    // Offsets already delivered come back only after a rejoin reset the position: skip them.
    const next = progress.next(batch.partition);
    let from = 0;
    if (next !== undefined) {
      while (from < messages.length && BigInt(messages[from]!.offset) < next) from++;
    }
    if (from < messages.length) {
      const records = new Array<IncomingRecord>(messages.length - from);
      for (let i = from; i < messages.length; i++) {
        records[i - from] = toIncoming(batch.topic, batch.partition, messages[i]!);
      }
      try {
        await onRecords(records);
      } catch (err) {
        // The caller's failure ends the read as it is; kafkajs would only retry the batch.
        callerFailure = asError(err);
        fail(callerFailure);
        return;
      }
    }
    // lastOffset() covers trailing markers and aborted records that were filtered out.
    advance(batch.partition, batch.lastOffset());
  };

  const consumer = kafka.consumer({
    groupId: `fraudlink-reader-${randomUUID()}`,
    readUncommitted: false,
    // Replay reads whole topics: large fetches keep the per-record cost low.
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 16 * 1024 * 1024,
    maxWaitTimeInMs: 200,
    retry: { initialRetryTime: 100, retries: 10 },
  });
  // A fetch holding only markers or aborted records never reaches eachBatch: kafkajs reports it here.
  consumer.on(consumer.events.END_BATCH_PROCESS, (event) => {
    if (!failed) advance(event.payload.partition, event.payload.lastOffset);
  });
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    const assigned = (event.payload.memberAssignment as Record<string, number[]>)[topic] ?? [];
    for (const partition of assigned) {
      const next = progress.next(partition);
      if (next !== undefined) consumer.seek({ topic, partition, offset: next.toString() });
    }
  });
  consumer.on(consumer.events.CRASH, (event) => {
    // With `restart`, kafkajs rejoins by itself and the seek above keeps the position.
    if (!event.payload.restart) fail(toKafkaError(event.payload.error, `reading ${topic} failed`));
  });
  const onAbort = () => (follow ? stop.resolve() : fail(aborted()));
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ autoCommit: false, eachBatch });
    checkCaughtUp(); // an empty topic, followed
    await stop.promise;
  } catch (err) {
    if (err === callerFailure || err instanceof FraudlinkError) throw err;
    throw toKafkaError(err, `reading ${topic} failed`);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await consumer.disconnect().catch(() => {});
  }
}
