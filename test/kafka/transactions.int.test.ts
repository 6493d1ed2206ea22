import { createRequire } from 'node:module';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { FencedError, KafkaError, MemberFencedError } from '../../src/errors.ts';
import { hasErrorType, oversizeTopicsOf, refusedTopicsOf } from '../../src/kafka/errors.ts';
import type { GroupMembership } from '../../src/kafka/index.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { keepTransactionProtocolV1, releaseTransactionProtocol } from '../../src/kafka/transaction-v2.ts';
import { collect, denyTopic, testClients, testTopics } from '../helpers/kafka.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

const text = (b: Buffer | null) => b?.toString() ?? null;
const require = createRequire(import.meta.url);
type BrokerRequest = (this: unknown, args: object) => Promise<unknown>;
const Broker = require('@fraudlink/kafkajs/src/broker/index.js') as {
  prototype: Record<
    | 'produce'
    | 'addPartitionsToTxn'
    | 'endTxn'
    | 'endTxnV5'
    | 'addOffsetsToTxn'
    | 'txnOffsetCommit'
    | 'txnOffsetCommitFlexible',
    BrokerRequest
  >;
};
const { createErrorFromCode } = require('@fraudlink/kafkajs/src/protocol/error.js') as {
  createErrorFromCode: (code: number) => unknown;
};
const { KafkaJSNonRetriableError, KafkaJSRequestTimeoutError } =
  require('@fraudlink/kafkajs/src/errors.js') as {
    KafkaJSNonRetriableError: new (message: string) => Error;
    KafkaJSRequestTimeoutError: new (message: string) => Error;
  };

/** Type of the produce spy: kafkajs's Broker.produce, as the tests below watch it. */
type ProduceSpy = { mock: { calls: unknown[][] } };

/**
 * The records each distinct Produce request carried, in order. kafkajs builds a request again from
 * the same messages after a retriable answer (most likely what one CI run saw: two calls for one
 * request on a new topic): a call carrying the very messages of the call before is that request again.
 */
function recordsPerRequest(produce: ProduceSpy): number[] {
  const requests: number[] = [];
  let previous: unknown[] = [];
  for (const [args] of produce.mock.calls) {
    const { topicData } = args as { topicData: { partitions: { messages: unknown[] }[] }[] };
    const messages = topicData.flatMap((t) => t.partitions.flatMap((p) => p.messages));
    const again = messages.length === previous.length && messages.every((m, i) => m === previous[i]);
    previous = messages;
    if (!again) requests.push(messages.length);
  }
  return requests;
}

/** What a transaction that must fail failed with (an Error saying so when it committed). */
const failureOf = (transaction: Promise<void>): Promise<Error> =>
  transaction.then(
    () => new Error('committed'),
    (err: unknown) => err as Error,
  );

/** Every record a read_committed reader sees on `topic` now. */
async function committedOn(
  kafka: ReturnType<typeof testClients>['kafka'],
  topic: string,
): Promise<unknown[]> {
  const seen: unknown[] = [];
  await kafka.readTopic(topic, (read) => void seen.push(...read));
  return seen;
}

describe('transactional producer on a real broker', () => {
  it('keeps a transactional send invisible to read_committed readers until commit', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-visibility']);
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx') });
    onTestFinished(() => producer.close());
    const committed = await collect(kafka, topic, 'read_committed');
    const uncommitted = await collect(kafka, topic, 'read_uncommitted');

    const tx = await producer.begin();
    await tx.send([{ topic, key: 'k', value: Buffer.from('pending') }]);
    await uncommitted.until((r) => r.some((x) => text(x.value) === 'pending'));
    // The sentinel shows the read_committed reader has fetched past the open transaction's start.
    expect(committed.records).toHaveLength(0);

    await tx.commit();
    const seen = await committed.until((r) => r.length === 1);
    expect(text(seen[0]?.value ?? null)).toBe('pending');
  });

  it('never shows an aborted transaction to a read_committed reader', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-abort']);
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx') });
    onTestFinished(() => producer.close());
    const aborted = await producer.begin();
    await aborted.send([{ topic, key: 'k', value: Buffer.from('aborted') }]);
    await aborted.abort();
    await producer.transaction([{ topic, key: 'k', value: Buffer.from('committed') }]);

    const reader = await collect(kafka, topic, 'read_committed');
    const seen = await reader.until((r) => r.some((x) => text(x.value) === 'committed'));
    expect(seen.map((x) => text(x.value))).toEqual(['committed']);
  });

  it('hides interleaved aborted transactions of two producers from a reader fetching one batch at a time', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-interleaved']);
    const [a, b, c] = await Promise.all(
      ['a', 'b', 'c'].map((n) => kafka.transactionalProducer({ transactionalId: uniqueName(`tx-${n}`) })),
    );
    onTestFinished(() => Promise.all([a, b, c].map((p) => p?.close())).then(() => {}));
    const ta = await (a as NonNullable<typeof a>).begin();
    const tb = await (b as NonNullable<typeof b>).begin();
    // One record batch each, alternating producers: a1 b1 a2 b2, then both abort.
    for (const [tx, value] of [
      [ta, 'a1'],
      [tb, 'b1'],
      [ta, 'a2'],
      [tb, 'b2'],
    ] as const) {
      await tx.send([{ topic, key: 'k', value: Buffer.from(value) }]);
    }
    await ta.abort();
    await tb.abort();
    await (c as NonNullable<typeof c>).transaction([{ topic, key: 'k', value: Buffer.from('committed') }]);

    // maxBytesPerPartition: 1 makes every fetch return a single record batch, so the fetch of b1
    // starts after both aborted transactions began: stock kafkajs delivered b1 there.
    const client = new kafkajs.Kafka({
      brokers: [stackEnv().KAFKA_BROKERS],
      logLevel: kafkajs.logLevel.NOTHING,
    });
    const consumer = client.consumer({ groupId: uniqueName('interleaved'), maxBytesPerPartition: 1 });
    onTestFinished(() => consumer.disconnect());
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(text(message.value) ?? '');
          if (seen.includes('committed')) resolve();
        },
      });
    });
    expect(seen).toEqual(['committed']);
  });

  it("commits a transaction larger than the broker's batch limit to one partition, in order", async () => {
    const { kafka } = testClients();
    // The broker's default max.message.bytes (1 MiB) bounds one record batch; kafkajs writes all of
    // one send's records for a partition as one batch.
    const [topic = ''] = await testTopics(kafka, ['tx-large']);
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx') });
    onTestFinished(() => producer.close());
    const values = ['a', 'b', 'c', 'd'].map((c) => Buffer.alloc(400_000, c));
    const produce = vi.spyOn(Broker.prototype, 'produce');
    onTestFinished(() => produce.mockRestore());
    await producer.transaction(values.map((value, i) => ({ topic, key: `k${i}`, value })));
    // Cut into requests of at most two records, none sent before the cut.
    expect(recordsPerRequest(produce)).toEqual([2, 2]);

    const reader = await collect(kafka, topic, 'read_committed');
    const seen = await reader.until((r) => r.length === 4);
    expect(seen.map((r) => r.value?.subarray(0, 1).toString())).toEqual(['a', 'b', 'c', 'd']);
    expect(seen.every((r) => r.value?.length === 400_000)).toBe(true);
  });

  it('sends a transaction larger than one batch in one request when no partition outgrows a batch', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-spread'], 6);
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx') });
    onTestFinished(() => producer.close());
    const produce = vi.spyOn(Broker.prototype, 'produce');
    onTestFinished(() => produce.mockRestore());
    // 1.5 MB over six partitions by key: ~250 kB each.
    const records = Array.from({ length: 60 }, (_, i) => ({
      topic,
      key: `k${i}`,
      value: Buffer.alloc(25_000, i % 26),
    }));
    await producer.transaction(records);
    expect(recordsPerRequest(produce)).toEqual([60]);

    const reader = await collect(kafka, topic, 'read_committed');
    const seen = await reader.until((r) => r.length === 60);
    expect(new Set(seen.map((r) => r.partition)).size).toBeGreaterThan(1);
    expect(seen.map((r) => r.key?.toString()).sort()).toEqual(records.map((r) => r.key).sort());
  });

  it('names the topic and the size of the largest record when the broker refuses a batch as too large', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-too-large'], 1, { 'max.message.bytes': '2000' });
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx') });
    onTestFinished(() => producer.close());
    const records = [500, 3_000, 100].map((size, i) => ({ topic, key: `k${i}`, value: Buffer.alloc(size) }));
    const failed = await failureOf(producer.transaction(records));
    expect(failed).toBeInstanceOf(KafkaError);
    expect(failed.message).toMatch(
      new RegExp(
        `largest record \\d{4} bytes as a batch, for topic ${topic}: raise its max\\.message\\.bytes`,
      ),
    );
    expect(Number(/largest record (\d+)/.exec(failed.message)?.[1])).toBeGreaterThan(3_000);
  });

  for (const protocol of ['v1', 'auto'] as const) {
    it(`sends each record of an unbatched topic in a batch of its own, which its max.message.bytes takes where it refused them together (${protocol})`, async () => {
      const { kafka } = testClients();
      const [open = ''] = await testTopics(kafka, ['tx-open']);
      const [small = ''] = await testTopics(kafka, ['tx-small'], 1, { 'max.message.bytes': '2000' });
      // On v1 a producer whose Produce failed may not begin another transaction: a new one each.
      const producer = async () => {
        const created = await kafka.transactionalProducer({ transactionalId, transactionProtocol: protocol });
        onTestFinished(() => created.close());
        return created;
      };
      const transactionalId = uniqueName('tx-unbatched');
      // Twelve records of ~300 bytes: each fits the topic alone, together they are a batch of ~3.6 kB.
      const records = Array.from({ length: 12 }, (_, i) => [
        { topic: small, key: `s${i}`, value: Buffer.alloc(250, i) },
        { topic: open, key: `o${i}`, value: Buffer.alloc(250, i) },
      ]).flat();
      const failed = await failureOf((await producer()).transaction(records));
      expect(oversizeTopicsOf(failed)).toEqual([small]);
      await (await producer()).transaction(records, { unbatchedTopics: new Set([small]) });
      const [smallRead, openRead] = await Promise.all(
        [small, open].map(async (topic) => (await collect(kafka, topic)).until((r) => r.length >= 12)),
      );
      expect(smallRead?.map((r) => text(r.key))).toEqual(
        records.filter((r) => r.topic === small).map((r) => r.key),
      );
      expect(openRead).toHaveLength(12);
    });

    it(`names the one topic of a transaction that refused its records for good, nothing committed (${protocol})`, async () => {
      const { kafka } = testClients();
      const [open = ''] = await testTopics(kafka, ['tx-open']);
      const [small = ''] = await testTopics(kafka, ['tx-small'], 1, { 'max.message.bytes': '100' });
      const producer = await kafka.transactionalProducer({
        transactionalId: uniqueName('tx-refused'),
        transactionProtocol: protocol,
      });
      onTestFinished(() => producer.close());
      const records = [open, small].map((topic) => ({ topic, key: 'k', value: Buffer.alloc(200) }));
      const failed = await failureOf(producer.transaction(records));
      expect(failed).toBeInstanceOf(KafkaError);
      expect(refusedTopicsOf(failed)).toEqual([small]);
      expect(await committedOn(kafka, open)).toEqual([]);
    });
  }

  it('names the topic of a transaction whose metadata the broker refuses (no Describe ACL), nothing committed', async () => {
    const { kafka } = testClients();
    const [open = '', denied = ''] = await testTopics(kafka, ['tx-open', 'tx-denied']);
    await denyTopic(denied, ['DESCRIBE', 'WRITE']);
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx-denied') });
    onTestFinished(() => producer.close());
    const records = [open, denied].map((topic) => ({ topic, key: 'k', value: Buffer.alloc(10) }));
    // kafkajs looks a send's topics up before any Produce: Metadata refuses this one.
    const failed = await failureOf(producer.transaction(records));
    expect(hasErrorType(failed, 'TOPIC_AUTHORIZATION_FAILED')).toBe(true);
    expect(refusedTopicsOf(failed)).toEqual([denied]);
    expect(await committedOn(kafka, open)).toEqual([]);
  });

  it('fences the first producer when a second one starts with the same transactional id', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-fence']);
    const id = uniqueName('tx-fenced');
    const first = await kafka.transactionalProducer({ transactionalId: id });
    onTestFinished(() => first.close());
    await first.transaction([{ topic, key: 'k', value: Buffer.from('one') }]);
    const second = await kafka.transactionalProducer({ transactionalId: id });
    onTestFinished(() => second.close());

    await expect(
      first.transaction([{ topic, key: 'k', value: Buffer.from('zombie') }]),
    ).rejects.toBeInstanceOf(FencedError);
    // Once fenced, always fenced: every later call fails the same way, without a broker round trip.
    await expect(first.begin()).rejects.toBeInstanceOf(FencedError);
    await second.transaction([{ topic, key: 'k', value: Buffer.from('two') }]);
    const reader = await collect(kafka, topic);
    const seen = await reader.until((r) => r.length >= 2);
    expect(seen.map((x) => text(x.value))).toEqual(['one', 'two']);
  });

  it('commits consumed offsets with the records in one transaction, and an aborted one commits neither', async () => {
    const { kafka } = testClients();
    const [source = '', sink = ''] = await testTopics(kafka, ['tx-offsets-in', 'tx-offsets-out']);
    const groupId = uniqueName('tx-offsets-group');
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx') });
    onTestFinished(() => producer.close());
    const admin = await kafka.admin();
    onTestFinished(() => admin.close());
    const consumed = { groupId, offsets: [{ topic: source, partition: 0, offset: '5' }] };

    const aborted = await producer.begin();
    await aborted.send([{ topic: sink, key: 'k', value: Buffer.from('aborted') }]);
    await aborted.sendOffsets(consumed);
    await aborted.abort();
    expect(await admin.groupOffsets(groupId, source)).toEqual([{ partition: 0, offset: '-1' }]);

    await producer.transaction([{ topic: sink, key: 'k', value: Buffer.from('reply') }], {
      consumerOffsets: consumed,
    });
    // commit() returns before the broker has written the markers that make the offsets stable.
    await expect
      .poll(() => admin.groupOffsets(groupId, source), { timeout: 30_000 })
      .toEqual([{ partition: 0, offset: '5' }]);
    const reader = await collect(kafka, sink);
    expect((await reader.until((r) => r.length === 1)).map((x) => text(x.value))).toEqual(['reply']);
  });
  for (const protocol of ['v1', 'auto'] as const) {
    it(`refuses the offsets of a member no longer in the group's generation, aborting its records (${protocol})`, async () => {
      const { kafka } = testClients();
      const [source = '', sink = ''] = await testTopics(kafka, ['tx-member-in', 'tx-member-out']);
      const groupId = uniqueName('tx-member-group');
      const admin = await kafka.admin();
      onTestFinished(() => admin.close());
      const producer = await kafka.transactionalProducer({
        transactionalId: uniqueName('tx-member'),
        transactionProtocol: protocol,
      });
      onTestFinished(() => producer.close());
      const member = (onAssignment: (m: GroupMembership | undefined) => void) =>
        kafka.groupConsumer({
          groupId,
          topics: [source],
          eachBatch: async () => {},
          onAssignment: (_, m) => onAssignment(m),
        });
      const joins: (GroupMembership | undefined)[] = [];
      const rejoined = Promise.withResolvers<GroupMembership | undefined>();
      const one = member((m) => {
        if (joins.push(m) === 2) rejoined.resolve(m);
      });
      onTestFinished(() => one.close());
      await one.start();
      const first = one.membership();
      expect(first).toEqual({ generationId: expect.any(Number), memberId: expect.any(String) });
      if (!first) return;
      // A second member joins: the group moves on a generation, the first member rejoining as itself.
      const two = member(() => {});
      onTestFinished(() => two.close());
      await two.start();
      const current = await rejoined.promise;
      expect(current).toEqual({ generationId: first.generationId + 1, memberId: first.memberId });
      expect(one.membership()).toEqual(current);
      const consumed = (offset: string, membership: GroupMembership | undefined) => ({
        groupId,
        offsets: [{ topic: source, partition: 0, offset }],
        membership,
      });

      const stale = [
        [first, 'ILLEGAL_GENERATION'],
        [{ generationId: first.generationId + 1, memberId: 'a-member-cut-off' }, 'UNKNOWN_MEMBER_ID'],
      ] as const;
      for (const [membership, type] of stale) {
        const refused = producer.transaction([{ topic: sink, key: 'k', value: Buffer.from(type) }], {
          consumerOffsets: consumed('5', membership),
        });
        await expect(refused).rejects.toBeInstanceOf(MemberFencedError);
        await expect(refused).rejects.toThrow(`no longer has member ${membership.memberId}`);
        expect(await refused.catch((err: unknown) => hasErrorType(err, type))).toBe(true);
      }
      await producer.transaction([{ topic: sink, key: 'k', value: Buffer.from('reply') }], {
        consumerOffsets: consumed('7', current),
      });
      await expect
        .poll(() => admin.groupOffsets(groupId, source), { timeout: 30_000 })
        .toEqual([{ partition: 0, offset: '7' }]);
      const reader = await collect(kafka, sink, 'read_committed');
      const seen = await reader.until((r) => r.some((x) => text(x.value) === 'reply'));
      expect(seen.map((x) => text(x.value))).toEqual(['reply']);
    });
  }
});

describe("Kafka's transaction protocols on a real broker (it finalizes transaction.version 2)", () => {
  /**
   * kafkajs itself (through fraudlink's fixes), to see the requests it sends: two committed
   * transactions around an aborted one, each with a record and the group's offset, then what a
   * read_committed reader and the group's committed offset show. Returns the requests of the second
   * transaction, which runs under the epoch the first one's EndTxn returned on v2.
   */
  async function threeTransactions(keepV1: boolean): Promise<string[]> {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-protocol']);
    const admin = await kafka.admin();
    onTestFinished(() => admin.close());
    const raw = new kafkajs.Kafka({
      brokers: stackEnv().KAFKA_BROKERS.split(','),
      logLevel: kafkajs.logLevel.NOTHING,
    });
    const transactionalId = uniqueName('tx-protocol');
    if (keepV1) {
      keepTransactionProtocolV1(transactionalId);
      onTestFinished(() => releaseTransactionProtocol(transactionalId));
    }
    const producer = raw.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
    const sent: string[] = [];
    producer.on(producer.events.REQUEST, ({ payload }) => {
      if (payload.apiName !== 'GroupCoordinator') sent.push(`${payload.apiName} v${payload.apiVersion}`);
    });
    await producer.connect();
    onTestFinished(() => producer.disconnect());
    const groupId = uniqueName('tx-protocol-group');

    const committedRound = async (value: string, offset: string) => {
      sent.length = 0;
      const tx = await producer.transaction();
      await tx.send({ topic, messages: [{ key: 'k', value }] });
      await tx.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic, partitions: [{ partition: 0, offset }] }],
      });
      await tx.commit();
      return [...sent];
    };
    await committedRound('first', '1');
    const second = await committedRound('second', '2');
    const aborted = await producer.transaction();
    await aborted.send({ topic, messages: [{ key: 'k', value: 'aborted' }] });
    await aborted.abort();
    await committedRound('third', '3');

    const reader = await collect(kafka, topic, 'read_committed');
    const seen = await reader.until((r) => r.length >= 3);
    expect(seen.map((x) => text(x.value))).toEqual(['first', 'second', 'third']);
    await expect
      .poll(() => admin.groupOffsets(groupId, topic), { timeout: 30_000 })
      .toEqual([{ partition: 0, offset: '3' }]);
    return second;
  }

  it('takes v2 by default: three requests a transaction', async () => {
    expect(await threeTransactions(false)).toEqual(['Produce v12', 'TxnOffsetCommit v5', 'EndTxn v5']);
  });

  it("keeps kafkajs's v1 for a transactional id kept on it: five requests, none of v2's versions", async () => {
    const second = await threeTransactions(true);
    // The first AddPartitionsToTxn may meet the last transaction's markers still being written
    // (CONCURRENT_TRANSACTIONS): kafkajs refreshes its metadata and sends it again.
    const names = new Set(second.map((r) => r.split(' ')[0]).filter((name) => name !== 'Metadata'));
    expect([...names]).toEqual([
      'AddPartitionsToTxn',
      'Produce',
      'AddOffsetsToTxn',
      'TxnOffsetCommit',
      'EndTxn',
    ]);
    expect(second).not.toContain('Produce v12');
    expect(second).not.toContain('EndTxn v5');
  });

  for (const protocol of ['v1', 'auto'] as const) {
    it(`commits once when EndTxn's response is lost, the retry answered as the first (${protocol})`, async () => {
      const { kafka } = testClients();
      const [topic = ''] = await testTopics(kafka, ['tx-lost-end']);
      const method = protocol === 'v1' ? 'endTxn' : 'endTxnV5';
      const original = Broker.prototype[method];
      // The coordinator ends the transaction, and the response never arrives.
      const lost = vi.spyOn(Broker.prototype, method).mockImplementationOnce(async function (
        this: unknown,
        args,
      ) {
        await original.call(this, args);
        throw new KafkaJSRequestTimeoutError('Request EndTxn timed out (response dropped by the test)');
      });
      onTestFinished(() => lost.mockRestore());
      const producer = await kafka.transactionalProducer({
        transactionalId: uniqueName('tx-lost-end'),
        transactionProtocol: protocol,
      });
      onTestFinished(() => producer.close());

      await producer.transaction([{ topic, key: 'k', value: Buffer.from('first') }]);
      expect(lost.mock.calls.length).toBeGreaterThanOrEqual(2);
      // On v2 the next transaction runs under the epoch the retry returned; a wrong one is fenced.
      await producer.transaction([{ topic, key: 'k', value: Buffer.from('second') }]);

      const reader = await collect(kafka, topic, 'read_committed');
      const seen = await reader.until((r) => r.some((x) => text(x.value) === 'second'));
      expect(seen.map((x) => text(x.value))).toEqual(['first', 'second']);
    });
  }

  for (const [protocol, method] of [
    ['v1', 'addOffsetsToTxn'],
    ['v1', 'txnOffsetCommit'],
    ['auto', 'txnOffsetCommitFlexible'],
  ] as const) {
    it(`commits the offsets when the response to ${method} is lost, sending it again (${protocol})`, async () => {
      const { kafka } = testClients();
      const [topic = ''] = await testTopics(kafka, ['tx-lost-offsets']);
      const admin = await kafka.admin();
      onTestFinished(() => admin.close());
      const original = Broker.prototype[method];
      // The coordinator acts on the request, and the response never arrives.
      const lost = vi.spyOn(Broker.prototype, method).mockImplementationOnce(async function (
        this: unknown,
        args,
      ) {
        await original.call(this, args);
        throw new KafkaJSRequestTimeoutError(`Request ${method} timed out (response dropped by the test)`);
      });
      onTestFinished(() => lost.mockRestore());
      const producer = await kafka.transactionalProducer({
        transactionalId: uniqueName('tx-lost-offsets'),
        transactionProtocol: protocol,
      });
      onTestFinished(() => producer.close());
      const groupId = uniqueName('tx-lost-offsets-group');

      await producer.transaction([{ topic, key: 'k', value: Buffer.from('reply') }], {
        consumerOffsets: { groupId, offsets: [{ topic, partition: 0, offset: '7' }] },
      });
      expect(lost.mock.calls.length).toBeGreaterThanOrEqual(2);
      const reader = await collect(kafka, topic, 'read_committed');
      expect((await reader.until((r) => r.length === 1)).map((x) => text(x.value))).toEqual(['reply']);
      await expect
        .poll(() => admin.groupOffsets(groupId, topic), { timeout: 30_000 })
        .toEqual([{ partition: 0, offset: '7' }]);
    });
  }

  for (const [protocol, method] of [
    ['v1', 'addPartitionsToTxn'],
    ['auto', 'produce'],
  ] as const) {
    it(`commits under a new producer id when the coordinator has forgotten the old one (${protocol})`, async () => {
      const { kafka } = testClients();
      const [topic = ''] = await testTopics(kafka, ['tx-expired-id']);
      const producer = await kafka.transactionalProducer({
        transactionalId: uniqueName('tx-expired-id'),
        transactionProtocol: protocol,
      });
      onTestFinished(() => producer.close());
      await producer.transaction([{ topic, key: 'k', value: Buffer.from('before') }]);
      // What the coordinator answers once transactional.id.expiration.ms (7 days) has passed idle.
      const forgotten = vi
        .spyOn(Broker.prototype, method)
        .mockRejectedValueOnce(createErrorFromCode(49) as Error);
      onTestFinished(() => forgotten.mockRestore());

      await producer.transaction([{ topic, key: 'k', value: Buffer.from('after') }]);
      expect(forgotten).toHaveBeenCalled();
      const reader = await collect(kafka, topic, 'read_committed');
      const seen = await reader.until((r) => r.some((x) => text(x.value) === 'after'));
      expect(seen.map((x) => text(x.value))).toEqual(['before', 'after']);
    });
  }

  /**
   * A producer on `protocol` whose first transaction's Produce the broker writes while the client
   * sees it fail with `lost` (once), and what a second transaction then does.
   */
  async function afterAWrittenProduceFailed(protocol: 'v1' | 'auto', lost: () => Error) {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-seq-reuse']);
    const original = Broker.prototype.produce;
    const produce = vi.spyOn(Broker.prototype, 'produce').mockImplementationOnce(async function (
      this: unknown,
      args,
    ) {
      await original.call(this, args);
      throw lost();
    });
    onTestFinished(() => produce.mockRestore());
    const producer = await kafka.transactionalProducer({
      transactionalId: uniqueName('tx-seq-reuse'),
      transactionProtocol: protocol,
    });
    onTestFinished(() => producer.close());
    const first = producer.transaction([{ topic, key: 'k', value: Buffer.from('first') }]).then(
      () => 'committed',
      (e: unknown) => e,
    );
    const second = await first.then(() =>
      producer.transaction([{ topic, key: 'k', value: Buffer.from('second') }]).then(
        () => 'committed',
        (e: unknown) => e,
      ),
    );
    return { kafka, topic, first: await first, second };
  }

  it('refuses a transaction after one whose Produce failed once written (v1): its records would be dropped as duplicates', async () => {
    // Not retried by kafkajs: as a lost response once its retries are spent, in a moment.
    const { kafka, topic, first, second } = await afterAWrittenProduceFailed(
      'v1',
      () => new KafkaJSNonRetriableError('Produce response lost (dropped by the test)'),
    );
    expect(first).toBeInstanceOf(KafkaError);
    expect(second).toBeInstanceOf(KafkaError);
    expect(second).toMatchObject({ retriable: false, message: expect.stringMatching(/must be recreated/) });
    const seen: string[] = [];
    await kafka.readTopic(topic, (records) => void seen.push(...records.map((r) => text(r.value) ?? '')));
    expect(seen).toEqual([]);
  });

  it('goes on after a Produce whose lost response kafkajs retried, each record read once (v1)', async () => {
    const { kafka, topic, first, second } = await afterAWrittenProduceFailed(
      'v1',
      () => new KafkaJSRequestTimeoutError('Request Produce timed out (response dropped by the test)'),
    );
    expect([first, second]).toEqual(['committed', 'committed']);
    const seen: string[] = [];
    await kafka.readTopic(topic, (records) => void seen.push(...records.map((r) => text(r.value) ?? '')));
    expect(seen).toEqual(['first', 'second']);
  });

  it('goes on after a transaction whose Produce failed once written (v2: its end bumps the epoch)', async () => {
    const { kafka, topic, first, second } = await afterAWrittenProduceFailed(
      'auto',
      () => new KafkaJSNonRetriableError('Produce response lost (dropped by the test)'),
    );
    expect(first).toBeInstanceOf(KafkaError);
    expect(second).toBe('committed');
    const seen: string[] = [];
    await kafka.readTopic(topic, (records) => void seen.push(...records.map((r) => text(r.value) ?? '')));
    expect(seen).toEqual(['second']);
  });

  it("commits offsets-only transactions back to back on v2, retrying TxnOffsetCommit while the last one's markers are written", async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-offsets-back-to-back']);
    const admin = await kafka.admin();
    onTestFinished(() => admin.close());
    const original = Broker.prototype.txnOffsetCommitFlexible;
    let concurrent = 0;
    const commits = vi.spyOn(Broker.prototype, 'txnOffsetCommitFlexible').mockImplementation(async function (
      this: unknown,
      args,
    ) {
      try {
        return await original.call(this, args);
      } catch (e) {
        if (hasErrorType(e, 'CONCURRENT_TRANSACTIONS')) concurrent++;
        throw e;
      }
    });
    onTestFinished(() => commits.mockRestore());
    const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('tx-offsets-only') });
    onTestFinished(() => producer.close());
    const groupId = uniqueName('tx-offsets-only-group');

    // A consumer that answers nothing for its records still commits their offsets, one
    // transaction each: the next TxnOffsetCommit v5 meets the last transaction's markers.
    for (let i = 1; i <= 100; i++) {
      await producer.transaction([], {
        consumerOffsets: { groupId, offsets: [{ topic, partition: 0, offset: String(i) }] },
      });
    }
    expect(concurrent).toBeGreaterThan(0);
    await expect
      .poll(() => admin.groupOffsets(groupId, topic), { timeout: 30_000 })
      .toEqual([{ partition: 0, offset: '100' }]);
  });

  it('starts a member at the offsets of a transaction still completing, once it completes (stable offsets)', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['tx-stable-offsets']);
    const groupId = uniqueName('tx-stable-group');
    const producer = await kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send(['0', '1', '2', '3', '4'].map((v) => ({ topic, key: v, value: Buffer.from(v) })));
    const transactional = await kafka.transactionalProducer({ transactionalId: uniqueName('tx') });
    onTestFinished(() => transactional.close());
    // A member of the group answered offsets 0-2 and commits that in a transaction not yet ended.
    const tx = await transactional.begin();
    await tx.sendOffsets({ groupId, offsets: [{ topic, partition: 0, offset: '3' }] });

    const raw = new kafkajs.Kafka({
      brokers: stackEnv().KAFKA_BROKERS.split(','),
      logLevel: kafkajs.logLevel.NOTHING,
    });
    const consumer = raw.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 1000 });
    onTestFinished(() => consumer.disconnect());
    const answered = Promise.withResolvers<string>();
    consumer.on(consumer.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'OffsetFetch') answered.resolve(`v${payload.apiVersion}`);
    });
    const first = Promise.withResolvers<string>();
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => first.resolve(message.offset) });
    // The coordinator has answered the member's first OffsetFetch (unstable, with v7).
    expect(await answered.promise).toBe('v7');
    await tx.commit();
    expect(await first.promise).toBe('3');
  });
});
