import { createRequire } from 'node:module';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import type { GroupMembership, IncomingRecord, KafkaClient } from '../../src/kafka/index.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

const require = createRequire(import.meta.url);
const ConsumerGroup = require('@fraudlink/kafkajs/src/consumer/consumerGroup.js') as {
  prototype: { fetch(nodeId: number): Promise<unknown[]>; seekOffsets(partitions: unknown): Promise<void> };
};
const { KafkaJSNoBrokerAvailableError } = require('@fraudlink/kafkajs/src/errors.js') as {
  KafkaJSNoBrokerAvailableError: new () => Error;
};

/** `send(value, partitions)` writes one record to each of `topic`'s `partitions`; `values(p)` are those `seen` from p. */
async function probe(kafka: KafkaClient, topic: string, seen: IncomingRecord[]) {
  const producer = await kafka.producer();
  onTestFinished(() => producer.close());
  return {
    send: (value: string, partitions: number[]) =>
      producer.send(
        partitions.map((partition) => ({ topic, partition, key: null, value: Buffer.from(value) })),
      ),
    values: (partition: number) =>
      seen.filter((r) => r.partition === partition).map((r) => r.value?.toString()),
  };
}

interface Join {
  partitions: number[];
  membership: GroupMembership | undefined;
}

/**
 * A resumeOnRejoin member, alone in a new group, reading a new 2-partition topic from the latest
 * offset: partition 0 delivers 'before'; paused, it is sent 'during' on both partitions; `rejoin`
 * makes it join again; resumed, it is sent 'after' on both. Each partition must then have delivered
 * everything sent to it, none skipped by the rejoin.
 */
async function readsOnAcrossRejoin(
  name: string,
  rejoin: (group: { groupId: string; joins: Join[] }) => Promise<void>,
): Promise<{ joins: Join[]; crashes: boolean[] }> {
  const { kafka } = testClients();
  const [topic = ''] = await testTopics(kafka, [name], 2);
  const groupId = uniqueName('g');
  const seen: IncomingRecord[] = [];
  const joins: Join[] = [];
  const crashes: boolean[] = [];
  const rejoined = Promise.withResolvers<void>();
  const one = kafka.groupConsumer({
    groupId,
    topics: [topic],
    fromBeginning: false,
    resumeOnRejoin: true,
    onCrash: (_, restarting) => crashes.push(restarting),
    onAssignment(assigned, membership) {
      joins.push({ partitions: assigned.flatMap((a) => a.partitions).sort(), membership });
      if (joins.length === 2) rejoined.resolve();
    },
    eachBatch: async (batch) => {
      seen.push(...batch.records);
    },
  });
  onTestFinished(() => one.close());
  await one.start();
  const { send, values } = await probe(kafka, topic, seen);
  await send('before', [0]);
  await expect.poll(() => values(0), { timeout: 15_000 }).toEqual(['before']);
  one.pause([{ topic }]);
  await send('during', [0, 1]);
  await rejoin({ groupId, joins });
  await rejoined.promise;
  one.resume([{ topic }]);
  await send('after', [0, 1]);
  await expect.poll(() => values(0), { timeout: 15_000 }).toEqual(['before', 'during', 'after']);
  await expect.poll(() => values(1), { timeout: 15_000 }).toEqual(['during', 'after']);
  return { joins, crashes };
}

interface GroupCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(args: { groupId: string }): Promise<{
    leaveGroup(args: { groupId: string; memberId: string }): Promise<unknown>;
  }>;
}

/**
 * Removes a member from its group (LeaveGroup v3, naming the member), as a coordinator that lost it
 * would: the member learns it at its next heartbeat (UNKNOWN_MEMBER_ID) and rejoins under a new id,
 * alone in its group, so it keeps every partition. Through kafkajs's private cluster factory: its
 * admin has no such call.
 */
async function removeMember(groupId: string, memberId: string): Promise<void> {
  const raw = new kafkajs.Kafka({
    brokers: stackEnv().KAFKA_BROKERS.split(','),
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const factory = Object.getOwnPropertySymbols(raw).find(
    (s) => s.description === 'private:Kafka:createCluster',
  );
  const cluster = (raw as unknown as Record<symbol, (o: object) => GroupCluster>)[factory as symbol]?.({});
  if (!cluster) throw new Error('kafkajs has no cluster factory');
  await cluster.connect();
  try {
    const coordinator = await cluster.findGroupCoordinator({ groupId });
    await coordinator.leaveGroup({ groupId, memberId });
  } finally {
    await cluster.disconnect();
  }
}

describe('group consumer on a real broker', () => {
  it('does not leave start() hanging when closed before it joined its group', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['consumer-close']);
    const consumer = kafka.groupConsumer({
      groupId: uniqueName('g'),
      topics: [topic],
      eachBatch: async () => {},
    });
    const starting = consumer.start();
    await consumer.close();
    await expect(starting).rejects.toThrow('closed before it joined its group');
  });

  it('resumes delivery to a paused partition', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['consumer-pause']);
    const seen: IncomingRecord[] = [];
    const { promise: delivered, resolve } = Promise.withResolvers<void>();
    const consumer = kafka.groupConsumer({
      groupId: uniqueName('g'),
      topics: [topic],
      eachBatch: async (batch) => {
        seen.push(...batch.records);
        resolve();
      },
    });
    onTestFinished(() => consumer.close());
    await consumer.start();
    consumer.pause([{ topic }]);
    const producer = await kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send([{ topic, key: 'k', value: Buffer.from('v') }]);
    consumer.resume([{ topic, partitions: [0] }]);
    await delivered;
    expect(seen.map((r) => r.value?.toString())).toEqual(['v']);
  });

  it('with resumeOnRejoin, reads on after a rebalance from where it was, not from the latest offset', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['consumer-rejoin'], 2);
    const groupId = uniqueName('g');
    const seen: IncomingRecord[] = [];
    let notify = () => {};
    const arrived = (predicate: () => boolean) =>
      new Promise<void>((resolve) => {
        notify = () => predicate() && resolve();
        notify();
      });
    const assignments: number[][] = [];
    const rejoined = Promise.withResolvers<number[]>();
    const one = kafka.groupConsumer({
      groupId,
      topics: [topic],
      fromBeginning: false,
      resumeOnRejoin: true,
      onAssignment(assigned) {
        assignments.push(assigned.flatMap((a) => a.partitions));
        if (assignments.length === 2) rejoined.resolve(assignments[1] ?? []);
      },
      eachBatch: async (batch) => {
        seen.push(...batch.records);
        notify();
      },
    });
    onTestFinished(() => one.close());
    await one.start();
    const producer = await kafka.producer();
    onTestFinished(() => producer.close());
    const send = (value: string) =>
      producer.send([0, 1].map((partition) => ({ topic, partition, key: null, value: Buffer.from(value) })));
    await send('before');
    await arrived(() => seen.length === 2);
    // Written while the first member does not fetch and the group rebalances around it.
    one.pause([{ topic }]);
    await send('during');
    const two = kafka.groupConsumer({
      groupId,
      topics: [topic],
      fromBeginning: false,
      eachBatch: async () => {},
    });
    onTestFinished(() => two.close());
    const [kept] = await Promise.all([rejoined.promise, two.start()]);
    expect(kept).toHaveLength(1);
    one.resume([{ topic }]);
    await send('after');
    const mine = () => seen.filter((r) => r.partition === kept?.[0]).map((r) => r.value?.toString());
    await arrived(() => mine().includes('after'));
    expect(mine()).toEqual(['before', 'during', 'after']);
  });

  it('with resumeOnRejoin, after a rejoin reads a partition that had delivered nothing from where it started, not from the latest offset', async () => {
    // Before the fix, partition 1 started again from the offset latest at the first fetch after the
    // rejoin: 'during' was skipped, and 'after' too when written before that fetch.
    const { joins } = await readsOnAcrossRejoin('consumer-rejoin-unread', ({ groupId, joins }) =>
      removeMember(groupId, joins[0]?.membership?.memberId ?? ''),
    );
    expect(joins[1]?.partitions).toEqual([0, 1]);
  });

  it('with resumeOnRejoin, a partition assigned anew at a rejoin starts at the group offset, and a later rejoin does not skip it', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['consumer-rejoin-new'], 2);
    const groupId = uniqueName('g');
    const seen: IncomingRecord[] = [];
    const joins: { partitions: number[]; membership: GroupMembership | undefined }[] = [];
    const joined = [1, 2, 3, 4].map(() => Promise.withResolvers<void>());
    const one = kafka.groupConsumer({
      groupId,
      topics: [topic],
      fromBeginning: false,
      resumeOnRejoin: true,
      onAssignment(assigned, membership) {
        joins.push({ partitions: assigned.flatMap((a) => a.partitions).sort(), membership });
        joined[joins.length - 1]?.resolve();
      },
      eachBatch: async (batch) => {
        seen.push(...batch.records);
      },
    });
    onTestFinished(() => one.close());
    await one.start();
    const { send, values } = await probe(kafka, topic, seen);
    await send('early', [0, 1]);
    await expect.poll(() => seen.length, { timeout: 15_000 }).toBe(2);
    // A second member takes one partition over for a while, then leaves: the first gets it back anew.
    const two = kafka.groupConsumer({
      groupId,
      topics: [topic],
      fromBeginning: false,
      eachBatch: async () => {},
    });
    await Promise.all([joined[1]?.promise, two.start()]);
    const away = [0, 1].find((p) => !joins[1]?.partitions.includes(p)) ?? -1;
    await send('while away', [away]);
    // Resolved once a fetch after the third join has resolved the start offsets (hook 13 records them).
    const resolving = ConsumerGroup.prototype.seekOffsets;
    const resolved = Promise.withResolvers<void>();
    const startsResolved = resolved.promise;
    const seek = vi.spyOn(ConsumerGroup.prototype, 'seekOffsets').mockImplementation(async function (
      this: unknown,
      partitions: unknown,
    ) {
      await resolving.call(this, partitions);
      if (joins.length === 3) resolved.resolve();
    });
    onTestFinished(() => seek.mockRestore());
    await two.close();
    await joined[2]?.promise;
    expect(joins[2]?.partitions).toEqual([0, 1]);
    // The first fetch after that join resolves the partition's start (the latest offset: this group
    // commits nothing); the partition delivers no record before the next rejoin.
    await startsResolved;
    one.pause([{ topic }]);
    await send('during', [away]);
    await removeMember(groupId, joins[2]?.membership?.memberId ?? '');
    await joined[3]?.promise;
    one.resume([{ topic }]);
    await send('after', [away]);
    await expect.poll(() => values(away), { timeout: 15_000 }).toEqual(['early', 'during', 'after']);
  });

  it('with resumeOnRejoin, reads every partition on from where it was after kafkajs restarts the member from a crash', async () => {
    const { joins, crashes } = await readsOnAcrossRejoin('consumer-restart', async () => {
      // A failure kafkajs gives up on at once and restarts from: a new ConsumerGroup joins anew.
      const fetch = vi
        .spyOn(ConsumerGroup.prototype, 'fetch')
        .mockRejectedValueOnce(new KafkaJSNoBrokerAvailableError());
      onTestFinished(() => fetch.mockRestore());
    });
    expect(crashes).toEqual([true]);
    expect(joins[1]?.partitions).toEqual([0, 1]);
  });

  it('awaits beforeJoin before each join: a rebalance waits for a member still finishing its work', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['consumer-before-join'], 2);
    const groupId = uniqueName('g');
    const events: string[] = [];
    const held = Promise.withResolvers<void>();
    const rejoining = Promise.withResolvers<void>();
    let joins = 0;
    const one = kafka.groupConsumer({
      groupId,
      topics: [topic],
      async beforeJoin() {
        joins += 1;
        if (joins === 1) return; // the first join
        events.push('one rejoining');
        rejoining.resolve();
        await held.promise;
        events.push('one released');
      },
      onAssignment: (assigned) => events.push(`one assigned ${assigned.flatMap((a) => a.partitions).length}`),
      eachBatch: async () => {},
    });
    onTestFinished(() => one.close());
    await one.start();
    const two = kafka.groupConsumer({
      groupId,
      topics: [topic],
      onAssignment: () => events.push('two assigned'),
      eachBatch: async () => {},
    });
    onTestFinished(() => two.close());
    const starting = two.start();
    // The second member's JoinGroup made the group rebalance; the first member noticed and waits.
    await rejoining.promise;
    held.resolve();
    await starting;
    expect(events.slice(0, 3)).toEqual(['one assigned 2', 'one rejoining', 'one released']);
    expect(events.indexOf('two assigned')).toBeGreaterThan(events.indexOf('one released'));
  });
});
