import { randomUUID } from 'node:crypto';
import type { EachBatchPayload, Kafka } from '@fraudlink/kafkajs';
import { AbortedError, FraudlinkError, KafkaError, UnreadableBatchError } from '../errors.ts';
import { retry, unlessAborted } from '../retry.ts';
import { toKafkaError } from './errors.ts';
import { createReadProgress, type PartitionEnd } from './read-progress.ts';
import { toIncoming } from './records.ts';
import type { AwaitOpenTransactions, IncomingRecord, KafkaAdmin, ReadTopicOptions } from './types.ts';

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

interface OffsetsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number }[];
  fetchTopicsOffset(
    topics: { topic: string; fromBeginning: boolean; partitions: { partition: number }[] }[],
  ): Promise<{ partitions: { partition: number; offset: string }[] }[]>;
}

const READ_UNCOMMITTED = 0;

/**
 * Each partition's high watermark (ListOffsets read_uncommitted). kafkajs's admin lists offsets
 * read_committed only; its private cluster factory (kafkajs 2.2.4, the admin's own) takes the level.
 */
async function highWatermarks(kafka: Kafka, topic: string): Promise<Map<number, string>> {
  const factory = Object.getOwnPropertySymbols(kafka).find(
    (s) => s.description === 'private:Kafka:createCluster',
  );
  if (factory === undefined) throw new Error('kafkajs has no cluster factory: high watermarks unreadable');
  const create = (kafka as unknown as Record<symbol, (o: object) => OffsetsCluster>)[factory];
  const cluster = create?.({ allowAutoTopicCreation: false, isolationLevel: READ_UNCOMMITTED });
  if (!cluster) throw new Error('kafkajs cluster factory returned nothing');
  try {
    await cluster.connect();
    await cluster.addTargetTopic(topic);
    const partitions = cluster.findTopicPartitionMetadata(topic).map((p) => ({ partition: p.partitionId }));
    const [offsets] = await cluster.fetchTopicsOffset([{ topic, fromBeginning: false, partitions }]);
    return new Map((offsets?.partitions ?? []).map((p) => [p.partition, p.offset]));
  } catch (err) {
    throw toKafkaError(err, `fetch high watermarks of ${topic}`);
  } finally {
    await cluster.disconnect().catch(() => {});
  }
}

/**
 * The ends to read to when records committed after a still-open transaction must be read: each
 * partition's high watermark, once its last stable offset has reached it. There is no event for the
 * last stable offset moving (the broker writes the markers after EndTxn): it is polled, backing off.
 */
async function stableEnds(
  kafka: Kafka,
  admin: KafkaAdmin,
  topic: string,
  { timeoutMs, onWaiting }: AwaitOpenTransactions,
  signal: AbortSignal | undefined,
): Promise<PartitionEnd[]> {
  const abortable = signal ? { signal } : {};
  // A missing topic fails at once, not retriable, as admin.topicOffsets does: the high watermarks'
  // lookup reports it retriable, and `connector status` on a mistyped topic retried it for ~5 s
  // before it failed on "This server does not host this topic-partition".
  if ((await admin.partitionCount(topic)) === 0) {
    throw new KafkaError(`topic ${topic} does not exist`, { retriable: false });
  }
  const highs = await retry(() => highWatermarks(kafka, topic), {
    retries: 10,
    initialDelayMs: 50,
    maxDelayMs: 1000,
    ...abortable,
  });
  const started = Date.now();
  let waiting = false;
  return retry(
    async () => {
      const ends = await admin.topicOffsets(topic);
      const behind = ends
        .map((e) => ({ lso: e.high, high: highs.get(e.partition) ?? e.high }))
        .filter((e) => BigInt(e.lso) < BigInt(e.high));
      if (behind.length === 0) return ends.map((e) => ({ ...e, high: highs.get(e.partition) ?? e.high }));
      if (!waiting) onWaiting?.(behind);
      waiting = true;
      throw new KafkaError(
        `${topic}: transactions still open after ${Date.now() - started} ms (last stable offset ` +
          `${behind.map((b) => `${b.lso} below high watermark ${b.high}`).join(', ')})`,
        { retriable: true },
      );
    },
    {
      retries: Number.POSITIVE_INFINITY,
      deadline: started + timeoutMs,
      initialDelayMs: 20,
      maxDelayMs: 1000,
      ...abortable,
    },
  );
}

/**
 * Reads a topic from its beginning to the end offsets taken at start (read_committed: the last stable
 * offsets, or with `awaitOpenTransactions` the high watermarks once stable), then resolves;
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
  const { signal, follow = false, fetchMaxBytes = 64 * 1024 * 1024 } = options;
  const aborted = () => new AbortedError(`reading ${topic} aborted`);
  if (signal?.aborted) {
    if (follow) return;
    throw aborted();
  }
  let ends: PartitionEnd[];
  try {
    // Raced against the signal: with the broker away, kafkajs's own retries of these lookups run
    // for tens of seconds, and a SIGTERM must not wait them out.
    ends = await unlessAborted(
      options.awaitOpenTransactions
        ? stableEnds(kafka, admin, topic, options.awaitOpenTransactions, signal)
        : admin.topicOffsets(topic),
      signal,
      `reading ${topic}`,
    );
  } catch (err) {
    if (!signal?.aborted) throw err;
    if (follow) return;
    throw aborted();
  }
  const progress = createReadProgress(ends);
  for (const [partition, next] of options.startOffsets ?? []) {
    if (next > 0n) progress.advance(partition, next - 1n);
  }
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
    options.onPosition?.(partition, BigInt(lastOffset) + 1n);
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
        const record = toIncoming(batch.topic, batch.partition, messages[i]!);
        if (record.unreadableBatch && !options.deliverUnreadableBatches) {
          fail(new UnreadableBatchError({ ...record.unreadableBatch, topic, partition: batch.partition }));
          return;
        }
        records[i - from] = record;
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
    maxBytes: fetchMaxBytes,
    maxBytesPerPartition: Math.ceil(fetchMaxBytes / 4),
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
  if (signal?.aborted) onAbort();
  // While the broker is away kafkajs retries connecting and joining for minutes: an abort (SIGTERM)
  // ends the read at once rather than after them. A step's later failure is handled by the race.
  const stopped = Symbol('stopped');
  let ended = false;
  const unlessStopped = async (step: Promise<unknown>) => {
    try {
      return await Promise.race([step, stop.promise.then(() => stopped)]);
    } finally {
      // A step that lost the race goes on in kafkajs (connecting, retrying): once it ends, the
      // consumer is disconnected again, or it would stay connected with nothing to close it.
      void step
        .then(
          () => (ended ? consumer.disconnect() : undefined),
          () => {},
        )
        .catch(() => {});
    }
  };
  try {
    if ((await unlessStopped(consumer.connect())) === stopped) return;
    if ((await unlessStopped(consumer.subscribe({ topics: [topic], fromBeginning: true }))) === stopped)
      return;
    if ((await unlessStopped(consumer.run({ autoCommit: false, eachBatch }))) === stopped) return;
    checkCaughtUp(); // an empty topic, followed
    await stop.promise;
  } catch (err) {
    if (err === callerFailure || err instanceof FraudlinkError) throw err;
    throw toKafkaError(err, `reading ${topic} failed`);
  } finally {
    ended = true;
    signal?.removeEventListener('abort', onAbort);
    await consumer.disconnect().catch(() => {});
  }
}
