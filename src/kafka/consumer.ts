import type { Kafka } from '@fraudlink/kafkajs';
import { AbortedError } from '../errors.ts';
import { connectedUnlessAborted } from './connect.ts';
import { forgetCoordinators } from './coordinator-cache.ts';
import { toKafkaError } from './errors.ts';
import { assignerWithGroupHooks, type FetchOffsetReader, type KafkajsGroupState } from './kafkajs.ts';
import { toIncoming } from './records.ts';
import type { GroupConsumer, GroupConsumerOptions, GroupMembership, TopicPartitions } from './types.ts';

/** A consumer-group member; `start()` resolves once it has its first assignment and has fetched once. */
export function createGroupConsumer(kafka: Kafka, options: GroupConsumerOptions): GroupConsumer {
  let group: KafkajsGroupState | undefined;
  let membership: GroupMembership | undefined;
  // With resumeOnRejoin: per partition, where to read on after a rejoin. The offset after the last
  // record handed to eachBatch; before any, the offset kafkajs resolved for the partition's first
  // fetch in this assignment. kafkajs resolves them again at every join and this member commits
  // nothing, so a partition without a position would start again from the group's default (the
  // latest offset, for a requester), skipping what was written there meanwhile.
  const positions = new Map<string, { topic: string; partition: number; next: bigint }>();
  // Assigned partitions that have no position yet: those of a new assignment, until its first fetch.
  let unpositioned: { topic: string; partition: number }[] = [];
  const positionUnpositioned = (offsetOf: FetchOffsetReader) => {
    if (unpositioned.length === 0) return;
    unpositioned = unpositioned.filter(({ topic, partition }) => {
      const next = offsetOf(topic, partition);
      if (next === undefined) return true;
      positions.set(`${topic}\u0000${partition}`, { topic, partition, next });
      return false;
    });
  };
  const consumer = kafka.consumer({
    groupId: options.groupId,
    allowAutoTopicCreation: false,
    readUncommitted: options.isolation === 'read_uncommitted',
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 8 * 1024 * 1024,
    maxWaitTimeInMs: options.maxWaitMs ?? 100,
    // A member that died without leaving holds its partitions until the session times out: keep
    // that short so a restarted instance takes over within seconds.
    sessionTimeout: 10_000,
    heartbeatInterval: 1000,
    retry: { initialRetryTime: 100, retries: 10 },
    partitionAssigners: [
      assignerWithGroupHooks({
        beforeJoin: options.beforeJoin,
        onGroup: (g) => {
          group = g;
        },
        onOffsetsResolved: options.resumeOnRejoin ? positionUnpositioned : undefined,
      }),
    ],
  });
  let started: Promise<void> | undefined;
  let closed = false;
  // Joined and positioned: the first fetch after the join has resolved the start offsets, so a
  // record written from then on is seen even by a member that starts at the latest offset.
  const joined = Promise.withResolvers<void>();
  joined.promise.catch(() => {}); // a crash before start() awaits it is reported there, not as unhandled
  let assigned = false;
  const resumeKept = (assignment: Record<string, number[]>) => {
    const kept = Object.entries(assignment).flatMap(([topic, ps]) =>
      ps.map((partition) => ({ topic, partition })),
    );
    const keys = new Set(kept.map(({ topic, partition }) => `${topic}\u0000${partition}`));
    for (const [key, { topic, partition, next }] of positions) {
      if (!keys.has(key)) positions.delete(key);
      // kafkajs applies the seek at the member's next fetch, before resolving any other start offset.
      else consumer.seek({ topic, partition, offset: String(next) });
    }
    // Newly assigned: they start where the group says, resolved at the next fetch.
    unpositioned = kept.filter(({ topic, partition }) => !positions.has(`${topic}\u0000${partition}`));
  };
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    const assignment = event.payload.memberAssignment as Record<string, number[]>;
    // Taken now: kafkajs resets its member id as soon as the coordinator no longer knows it, and
    // offsets committed from then on would carry none, which the coordinator does not check.
    membership =
      group?.generationId != null && group.memberId
        ? { generationId: group.generationId, memberId: group.memberId }
        : undefined;
    if (options.resumeOnRejoin) resumeKept(assignment);
    options.onAssignment?.(
      Object.entries(assignment).map(([topic, partitions]) => ({ topic, partitions })),
      membership,
    );
    assigned = true;
    // A member with nothing assigned never fetches: it is ready as it is.
    if (Object.values(assignment).every((p) => p.length === 0)) joined.resolve();
  });
  consumer.on(consumer.events.FETCH, () => {
    // With resumeOnRejoin, positioned too: a fetch that failed before resolving them does not count.
    if (assigned && (!options.resumeOnRejoin || unpositioned.length === 0)) joined.resolve();
  });
  consumer.on(consumer.events.CRASH, (event) => {
    const { error, restart } = event.payload;
    membership = undefined; // kafkajs has left the group
    forgetCoordinators(); // the group coordinator may have moved: kafkajs's restart looks it up again
    const failure = toKafkaError(error, `consumer ${options.groupId} crashed`);
    // Without a restart the member is gone for good: a start() still waiting for the join must end.
    if (!restart) joined.reject(failure);
    options.onCrash?.(failure, restart);
  });
  const closedEarly = () => new AbortedError(`consumer ${options.groupId} closed before it joined its group`);
  const close = async () => {
    closed = true;
    joined.reject(closedEarly());
    await consumer.disconnect();
  };
  return {
    start(signal) {
      started ??= (async () => {
        try {
          await consumer.connect();
          await consumer.subscribe({ topics: options.topics, fromBeginning: options.fromBeginning ?? true });
          // Closed meanwhile (a stop request while kafkajs retried the connection): it must not join.
          if (closed) throw closedEarly();
          await consumer.run({
            autoCommit: options.autoCommit ?? false,
            partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
            eachBatch: async ({ batch, isRunning, isStale, heartbeat }) => {
              const records = batch.messages.map((m) => toIncoming(batch.topic, batch.partition, m));
              await options.eachBatch({
                topic: batch.topic,
                partition: batch.partition,
                records,
                isRunning,
                isStale,
                heartbeat,
              });
              const last = records.at(-1);
              if (options.resumeOnRejoin && last && !isStale()) {
                positions.set(`${batch.topic}\u0000${batch.partition}`, {
                  topic: batch.topic,
                  partition: batch.partition,
                  next: BigInt(last.offset) + 1n,
                });
              }
            },
          });
        } catch (err) {
          throw toKafkaError(err, `start consumer ${options.groupId}`);
        }
        await joined.promise;
      })();
      return connectedUnlessAborted(started, signal, `starting consumer ${options.groupId}`, close);
    },
    pause(partitions) {
      consumer.pause(toKafkajsPartitions(partitions));
    },
    resume(partitions) {
      consumer.resume(toKafkajsPartitions(partitions));
    },
    membership: () => membership,
    close,
  };
}

function toKafkajsPartitions(list: TopicPartitions[]): { topic: string; partitions?: number[] }[] {
  return list.map((p) => (p.partitions ? { topic: p.topic, partitions: p.partitions } : { topic: p.topic }));
}
