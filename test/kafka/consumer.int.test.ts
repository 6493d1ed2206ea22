import { describe, expect, it, onTestFinished } from 'vitest';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { uniqueName } from '../helpers/stack.ts';

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
