import { randomUUID } from 'node:crypto';
import type { EachBatchPayload, Kafka } from '@fraudlink/kafkajs';
import { AbortedError } from '../errors.ts';
import { unlessAborted } from '../retry.ts';
import { toIncoming } from './records.ts';
import type { KafkaAdmin, ReadRecordOptions, RecordFrom } from './types.ts';

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * The first record of one partition at or after `offset`, read_committed. kafkajs has no manual
 * assignment: a throwaway group (never committed, dropped by the broker once the reader leaves)
 * subscribes, seeks that partition to `offset` at every join and pauses the others. A fetch failure
 * (kafkajs crashes the consumer on a batch it cannot decode) or nothing within `timeoutMs` answers
 * `unreadable`, naming why, rather than rejecting: the caller reports what could not be read.
 */
export async function readRecordFrom(
  kafka: Kafka,
  admin: KafkaAdmin,
  topic: string,
  partition: number,
  offset: string,
  { timeoutMs, signal }: ReadRecordOptions,
): Promise<RecordFrom> {
  const ends = await unlessAborted(admin.topicOffsets(topic), signal, `reading ${topic}`);
  const end = ends.find((e) => e.partition === partition);
  if (end === undefined) return { kind: 'unreadable', reason: `${topic} has no partition ${partition}` };
  const target = BigInt(offset);
  if (target >= BigInt(end.high)) return { kind: 'end', end: end.high };

  const answer = Promise.withResolvers<RecordFrom>();
  const timer = setTimeout(
    () => answer.resolve({ kind: 'unreadable', reason: `no record was delivered within ${timeoutMs} ms` }),
    timeoutMs,
  );
  const onAbort = () => answer.reject(new AbortedError(`reading ${topic} aborted`));
  signal?.addEventListener('abort', onAbort, { once: true });
  const reachedEnd = (lastOffset: string) => {
    if (BigInt(lastOffset) >= BigInt(end.high) - 1n) answer.resolve({ kind: 'end', end: end.high });
  };

  const consumer = kafka.consumer({
    groupId: `fraudlink-reader-${randomUUID()}`,
    readUncommitted: false,
    maxWaitTimeInMs: 200,
    retry: { initialRetryTime: 100, retries: 3 },
  });
  const eachBatch = async ({ batch }: EachBatchPayload): Promise<void> => {
    if (batch.partition !== partition) return;
    const found = batch.messages.find((m) => BigInt(m.offset) >= target);
    if (found) answer.resolve({ kind: 'record', record: toIncoming(topic, partition, found) });
    else reachedEnd(batch.lastOffset());
  };
  // A fetch holding only markers or aborted records never reaches eachBatch: kafkajs reports it here.
  consumer.on(consumer.events.END_BATCH_PROCESS, (event) => {
    if (event.payload.partition === partition) reachedEnd(event.payload.lastOffset);
  });
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    const assigned = (event.payload.memberAssignment as Record<string, number[]>)[topic] ?? [];
    const others = assigned.filter((p) => p !== partition);
    if (others.length > 0) consumer.pause([{ topic, partitions: others }]);
    if (assigned.includes(partition)) consumer.seek({ topic, partition, offset });
  });
  consumer.on(consumer.events.CRASH, (event) => {
    answer.resolve({ kind: 'unreadable', reason: messageOf(event.payload.error) });
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ autoCommit: false, eachBatch });
    return await answer.promise;
  } catch (err) {
    if (err instanceof AbortedError) throw err;
    return { kind: 'unreadable', reason: messageOf(err) };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    await consumer.disconnect().catch(() => {});
  }
}
