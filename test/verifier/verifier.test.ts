import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import { AbortedError, KafkaError, MemberFencedError } from '../../src/errors.ts';
import type {
  ConsumedBatch,
  GroupConsumerOptions,
  GroupMembership,
  KafkaClient,
  OutgoingRecord,
  TransactionOptions,
} from '../../src/kafka/index.ts';
import { createLogger, type Logger, silentLogger } from '../../src/logger.ts';
import type { HeldReplyLimits } from '../../src/verifier/held-replies.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';
import { createVerifier, LIVENESS_MS } from '../../src/verifier/verifier.ts';
import { logCapture } from '../helpers/log.ts';
import { testHandlerDeps } from './deps.ts';

/** An upstream answer the test releases when it chooses. */
function heldAnswers() {
  const held: PromiseWithResolvers<{ partyNameMatch: 'MTCH' }>[] = [];
  const aborted: number[] = [];
  const released = new Set<number>();
  return {
    held,
    /** Indexes of the calls ended by their signal. */
    aborted,
    verify: (_request: unknown, options?: { signal?: AbortSignal }) => {
      const answer = Promise.withResolvers<{ partyNameMatch: 'MTCH' }>();
      const index = held.push(answer) - 1;
      options?.signal?.addEventListener('abort', () => {
        if (released.has(index)) return;
        aborted.push(index);
        answer.reject(new AbortedError('call aborted'));
      });
      return answer.promise;
    },
    release: (i: number) => {
      released.add(i);
      held[i]?.resolve({ partyNameMatch: 'MTCH' });
    },
  };
}

/** The broker refusing the verifier one of its own topics, as kafkajs reports it: a platform failure. */
function authorizationFailed(): Error {
  return Object.assign(new Error('TOPIC_AUTHORIZATION_FAILED'), { type: 'TOPIC_AUTHORIZATION_FAILED' });
}

/** The verifier's configuration with the requests topic `requests`, and `env` on top. */
function testConfig(env: Record<string, string> = {}) {
  return loadVerifierConfig({
    KAFKA_BROKERS: 'localhost:9092',
    SCHEMA_REGISTRY_URL: 'http://localhost:8081',
    API_BASE_URL: 'http://localhost:1',
    API_KEY: 'key',
    VERIFY_REQUESTS_TOPIC: 'requests',
    ...env,
  });
}

/** The member the stand-in consumer joins as, unless a test rejoins it as another. */
const MEMBER: GroupMembership = { generationId: 1, memberId: 'member-1' };

/** A JSON request as the consumer hands it over. */
function request(partition: number, offset: number) {
  const requestId = `r-${partition}-${offset}`;
  const now = Date.now();
  return {
    topic: 'requests',
    partition,
    offset: String(offset),
    key: Buffer.from(requestId),
    value: Buffer.from(
      JSON.stringify({ requestId, iban: 'DE89370400440532013000', partyName: 'Anna', requestedAt: now }),
    ),
    headers: {
      'content-type': Buffer.from('application/json'),
      'vop-deadline': Buffer.from(String(now + 60_000)),
    },
    timestamp: now,
  };
}

/** A batch of one partition's requests; `heartbeat` as the test gives it. */
function batchOf(
  partition: number,
  offsets: number[],
  heartbeat: () => Promise<void> = async () => {},
): ConsumedBatch {
  return {
    topic: 'requests',
    partition,
    records: offsets.map((o) => request(partition, o)),
    isRunning: () => true,
    isStale: () => false,
    heartbeat,
  };
}

/** A verifier on a stand-in Kafka client that hands the test its consumer's callbacks. */
async function startedVerifier(
  options: {
    concurrency?: number;
    verify?: (request: unknown, options?: { signal?: AbortSignal }) => Promise<unknown>;
    drainTimeoutMs?: number;
    /** How many transactions fail (the first ones) before they commit. */
    failingTransactions?: number;
    /** What they fail with (default: a Kafka authorization error). */
    transactionError?: () => Error;
    /** Awaited by every transaction before it commits. */
    transactionGate?: () => Promise<void>;
    /** An error for a transaction's records that the broker would refuse (undefined: none). */
    refusal?: (records: OutgoingRecord[]) => Error | undefined;
    /** Default: silent. */
    logger?: Logger;
    /** Run inside the consumer's close(), as kafkajs finishing a join under way would. */
    onConsumerClose?: () => void | Promise<void>;
    failCloseMs?: number;
    heldReplyLimits?: HeldReplyLimits;
    /** The first wait before a session restart (default 5 ms). */
    restartDelayMs?: number;
    /** The clock of the liveness check. */
    now?: () => number;
  } = {},
) {
  /** The pause and resume calls of the stand-in consumers, in order. */
  const pauses: string[] = [];
  /** Each consumer the verifier made (one per Kafka session), latest last. */
  const consumers: GroupConsumerOptions[] = [];
  let consumerOptions: GroupConsumerOptions | undefined;
  let failing = options.failingTransactions ?? 0;
  /** Every transaction's records, failed ones included, and the transactional ids opened, in order. */
  const attempts: OutgoingRecord[][] = [];
  const opened: string[] = [];
  /** The transactions committed: their records' keys and the offsets they commit. */
  const transactions: { keys: string[]; offsets: { partition: number; offset: string }[] }[] = [];
  /** The member each committed transaction's offsets were sent as. */
  const memberships: (GroupMembership | undefined)[] = [];
  let membership: GroupMembership | undefined;
  const onConsumerClose = options.onConsumerClose;
  const producer = {
    transaction: async (records: OutgoingRecord[], tx?: TransactionOptions) => {
      attempts.push(records);
      const refused = options.refusal?.(records);
      if (refused) throw refused;
      if (failing > 0) {
        failing--;
        throw options.transactionError?.() ?? authorizationFailed();
      }
      await options.transactionGate?.();
      transactions.push({
        keys: records.map((r) => String(r.key)),
        offsets: (tx?.consumerOffsets?.offsets ?? []).map(({ partition, offset }) => ({
          partition,
          offset,
        })),
      });
      memberships.push(tx?.consumerOffsets?.membership);
    },
    begin: async () => {
      throw new Error('not used');
    },
    close: async () => {},
  };
  const kafka = {
    transactionalProducer: async ({ transactionalId }: { transactionalId: string }) => {
      opened.push(transactionalId);
      return producer;
    },
    groupConsumer(options: GroupConsumerOptions) {
      consumerOptions = options;
      consumers.push(options);
      return {
        start: async () => {},
        pause: (list: { topic: string; partitions?: number[] }[]) =>
          pauses.push(`pause ${list.flatMap((l) => l.partitions ?? []).join(',')}`),
        resume: (list: { topic: string; partitions?: number[] }[]) =>
          pauses.push(`resume ${list.flatMap((l) => l.partitions ?? []).join(',')}`),
        membership: () => membership,
        close: async () => onConsumerClose?.(),
      };
    },
  } as unknown as KafkaClient;
  const config = testConfig({ VERIFY_CONCURRENCY: String(options.concurrency ?? 64) });
  const verify = options.verify ?? (async () => Promise.reject(new Error('not used')));
  const metrics = createVerifierMetrics(new Registry());
  const verifier = createVerifier({
    kafka,
    transactionalId: 'fraudlink-verifier-test',
    ...testHandlerDeps(config.verifier, { api: { verify } as never, metrics }),
    logger: options.logger ?? silentLogger(),
    ...(options.drainTimeoutMs !== undefined && { drainTimeoutMs: options.drainTimeoutMs }),
    ...(options.failCloseMs !== undefined && { failCloseMs: options.failCloseMs }),
    ...(options.heldReplyLimits && { heldReplyLimits: options.heldReplyLimits }),
    ...(options.now && { now: options.now }),
    restartPolicy: {
      retries: Number.POSITIVE_INFINITY,
      initialDelayMs: options.restartDelayMs ?? 5,
      maxDelayMs: Math.max(20, options.restartDelayMs ?? 0),
      factor: 2,
      jitter: 0,
    },
  });
  await verifier.start();
  if (!consumerOptions) throw new Error('the verifier made no consumer');
  const options_ = consumerOptions;
  // As the consumer does: its membership is the one its last assignment came with, and none once
  // it crashed (kafkajs has left the group).
  const consumer: GroupConsumerOptions = {
    ...options_,
    onAssignment(assigned, joinedAs) {
      membership = joinedAs;
      options_.onAssignment?.(assigned, joinedAs);
    },
    onCrash(err, restarting) {
      membership = undefined;
      options_.onCrash?.(err, restarting);
    },
  };
  consumer.onAssignment?.([{ topic: config.verifier.requestsTopic, partitions: [0, 1] }], MEMBER);
  const settled = { value: false };
  verifier.done.then(
    () => (settled.value = true),
    () => (settled.value = true),
  );
  return {
    verifier,
    consumer,
    consumers,
    settled,
    transactions,
    memberships,
    metrics,
    attempts,
    opened,
    pauses,
  };
}

describe('verifier consumer crashes', () => {
  it('keeps running while kafkajs restarts a crashed consumer, and is not ready until it rejoins', async () => {
    const { verifier, consumer, settled } = await startedVerifier();
    expect(verifier.ready().ready).toBe(true);
    consumer.onCrash?.(new Error('The coordinator is loading'), true);
    await Promise.resolve();
    expect(settled.value).toBe(false);
    expect(verifier.ready()).toEqual({ ready: false, reason: 'kafka session restarting' });
    consumer.onAssignment?.([{ topic: 'requests', partitions: [0, 1] }], MEMBER);
    expect(verifier.ready().ready).toBe(true);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
  });

  it('fails when the consumer crashed for good on a platform failure (its group refused)', async () => {
    const { verifier, consumer } = await startedVerifier();
    const fatal = Object.assign(new Error('Not authorized to access group'), {
      type: 'GROUP_AUTHORIZATION_FAILED',
    });
    consumer.onCrash?.(fatal, false);
    await expect(verifier.done).rejects.toBe(fatal);
  });
});

/** A verifier whose upstream answers only when released, request 0 of partition 0 in flight. */
async function oneInFlight(options: Omit<Parameters<typeof startedVerifier>[0], 'verify'> = {}) {
  const upstream = heldAnswers();
  const started = await startedVerifier({ ...options, verify: upstream.verify });
  await started.consumer.eachBatch(batchOf(0, [0]));
  return { ...started, upstream };
}

describe('verifier in-flight work', () => {
  it('commits nothing a crashed consumer had in flight: before it rejoins, its partitions may have another owner', async () => {
    const { verifier, consumer, transactions, upstream } = await oneInFlight();
    // kafkajs left the group before reporting the crash.
    consumer.onCrash?.(new Error('The coordinator is loading'), true);
    upstream.release(0);
    await verifier.stop();
    expect(upstream.held).toHaveLength(1);
    expect(transactions).toEqual([]);
  });

  it('commits nothing after a failed transaction: its offsets would cover the requests it lost', async () => {
    const { verifier, consumer, transactions, upstream } = await oneInFlight({ failingTransactions: 1 });
    await consumer.eachBatch(batchOf(0, [1]));
    upstream.release(0);
    await expect(verifier.done).rejects.toThrow('TOPIC_AUTHORIZATION_FAILED');
    // r-0-1's transaction would commit offset 2, past r-0-0, whose reply was lost.
    upstream.release(1);
    await verifier.stop();
    expect(upstream.held).toHaveLength(2);
    expect(transactions).toEqual([]);
  });

  it("commits each transaction's offsets as the member of its last assignment", async () => {
    const first = Promise.withResolvers<void>();
    const { verifier, consumer, transactions, memberships, upstream } = await oneInFlight({
      transactionGate: async () => first.resolve(),
    });
    upstream.release(0);
    await first.promise;
    await consumer.beforeJoin?.();
    const rejoined = { generationId: 2, memberId: 'member-1' };
    consumer.onAssignment?.([{ topic: 'requests', partitions: [0] }], rejoined);
    await consumer.eachBatch(batchOf(0, [1]));
    upstream.release(1);
    await verifier.stop();
    expect(transactions.map((t) => t.keys)).toEqual([['r-0-0'], ['r-0-1']]);
    expect(memberships).toEqual([MEMBER, rejoined]);
  });

  it('drops what it has in hand, and keeps running, when its offsets are refused as a member cut off from the group', async () => {
    const refused = Promise.withResolvers<void>();
    const { verifier, consumer, transactions, upstream, settled, metrics } = await oneInFlight({
      failingTransactions: 1,
      transactionError: () => {
        refused.resolve();
        return new MemberFencedError('group g no longer has member member-1 in generation 1');
      },
    });
    await consumer.eachBatch(batchOf(0, [1]));
    upstream.release(0); // r-0-0's transaction is refused
    await refused.promise;
    await new Promise(setImmediate); // the verifier's handling of the refusal, in microtasks
    upstream.release(1); // r-0-1, in hand when the refusal came, is dropped too
    await new Promise(setImmediate);
    expect(settled.value).toBe(false);
    expect(transactions).toEqual([]);
    expect((await metrics.memberFenced.get()).values[0]?.value).toBe(1);
    // kafkajs rejoins as a new member; the new assignment hands both requests again.
    await consumer.beforeJoin?.();
    const rejoined = { generationId: 3, memberId: 'member-2' };
    consumer.onAssignment?.([{ topic: 'requests', partitions: [0] }], rejoined);
    await consumer.eachBatch(batchOf(0, [0, 1]));
    upstream.release(2);
    upstream.release(3);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
    expect(transactions.flatMap((t) => t.keys)).toEqual(['r-0-0', 'r-0-1']);
    expect(transactions.at(-1)?.offsets).toEqual([{ partition: 0, offset: '2' }]);
  });

  it('keeps the requests in hand across a rejoin as the same member, and drops them on a rejoin as a new one', async () => {
    for (const [memberId, asked] of [
      ['member-1', 1], // stayed in the group: the request handed again is in flight already
      ['member-2', 2], // cut off meanwhile: another member may have answered it, it starts afresh
    ] as const) {
      const { verifier, consumer, transactions, upstream } = await oneInFlight();
      await consumer.beforeJoin?.();
      consumer.onAssignment?.([{ topic: 'requests', partitions: [0] }], { generationId: 2, memberId });
      await consumer.eachBatch(batchOf(0, [0]));
      expect(upstream.held, memberId).toHaveLength(asked);
      for (let i = 0; i < asked; i++) upstream.release(i);
      await verifier.stop();
      expect(
        transactions.flatMap((t) => t.keys),
        memberId,
      ).toEqual(['r-0-0']);
    }
  });

  it('before rejoining its group, lets the transaction under way finish and starts none until its new assignment', async () => {
    const gate = Promise.withResolvers<void>();
    const entered = Promise.withResolvers<void>();
    const { verifier, consumer, transactions, upstream } = await oneInFlight({
      transactionGate: () => {
        entered.resolve();
        return gate.promise;
      },
    });
    await consumer.eachBatch(batchOf(1, [0]));
    upstream.release(0);
    await entered.promise; // r-0-0's transaction is under way
    let rejoining = false;
    const beforeJoin = consumer.beforeJoin?.().then(() => (rejoining = true));
    upstream.release(1); // r-1-0 finishes while the member waits to rejoin
    await Promise.resolve();
    expect(rejoining).toBe(false);
    gate.resolve();
    await beforeJoin;
    expect(transactions.map((t) => t.keys)).toEqual([['r-0-0']]);
    // Partition 1 went to another member: its reply is never committed here; 0 is kept.
    consumer.onAssignment?.([{ topic: 'requests', partitions: [0] }], MEMBER);
    await consumer.eachBatch(batchOf(0, [1]));
    upstream.release(2);
    await verifier.stop();
    expect(transactions.map((t) => t.keys)).toEqual([['r-0-0'], ['r-0-1']]);
  });

  it('answers, once, a request it had in flight when it crashed and is handed again after the rejoin', async () => {
    const { verifier, consumer, transactions, upstream } = await oneInFlight();
    consumer.onCrash?.(new Error('The coordinator is loading'), true);
    consumer.onAssignment?.([{ topic: 'requests', partitions: [0] }], MEMBER);
    await consumer.eachBatch(batchOf(0, [0]));
    upstream.release(0);
    upstream.release(1);
    await verifier.stop();
    expect(transactions.flatMap((t) => t.keys)).toEqual(['r-0-0']);
  });

  it('heartbeats while a batch waits for a free slot, then hands out its request', async () => {
    const { verifier, consumer, transactions, upstream } = await oneInFlight({ concurrency: 1 });
    const heartbeat = Promise.withResolvers<void>();
    const waiting = consumer.eachBatch(batchOf(1, [0], async () => heartbeat.resolve()));
    await heartbeat.promise;
    expect(upstream.held).toHaveLength(1);
    upstream.release(0);
    await waiting;
    upstream.release(1);
    await verifier.stop();
    expect(transactions.flatMap((t) => t.keys).sort()).toEqual(['r-0-0', 'r-1-0']);
  });

  it('ends a waiting batch when its heartbeat finds the group rebalancing, and gives the slot back', async () => {
    const { verifier, consumer, upstream } = await oneInFlight({ concurrency: 1 });
    const rebalancing = new Error('The group is rebalancing');
    await expect(
      consumer.eachBatch(
        batchOf(1, [0], async () => {
          throw rebalancing;
        }),
      ),
    ).rejects.toBe(rebalancing);
    upstream.release(0);
    // The slot the ended batch was waiting for is free again: the next batch gets it.
    await consumer.eachBatch(batchOf(1, [0]));
    expect(upstream.held).toHaveLength(2);
    upstream.release(1);
    await verifier.stop();
  });

  it('hands out nothing more once stop() has begun, even to a batch that was waiting for a slot', async () => {
    const { verifier, consumer, transactions, upstream } = await oneInFlight({ concurrency: 1 });
    const waiting = consumer.eachBatch(batchOf(1, [0]));
    const stopped = verifier.stop();
    upstream.release(0);
    await Promise.all([waiting, stopped]);
    expect(upstream.held).toHaveLength(1);
    expect(transactions).toEqual([{ keys: ['r-0-0'], offsets: [{ partition: 0, offset: '1' }] }]);
  });

  it('starts no transaction for a join that ends while stop() closes the consumer (SIGTERM during a rebalance), which its producers would leave open', async () => {
    let rejoin = () => {};
    const { verifier, consumer, upstream, attempts } = await oneInFlight({ onConsumerClose: () => rejoin() });
    // kafkajs's close() lets the join under way finish: its assignment arrives during close().
    rejoin = () =>
      consumer.onAssignment?.([{ topic: 'requests', partitions: [0, 1] }], { ...MEMBER, generationId: 2 });
    await consumer.beforeJoin?.();
    // Answered while the member waits to rejoin: stop()'s flush finds commits paused.
    upstream.release(0);
    await verifier.stop();
    await new Promise(setImmediate); // a commit the join resumed, in microtasks
    expect(attempts).toEqual([]);
  });

  it('after a failed transaction hands out nothing more, ends the calls in flight, and closes its consumer before done rejects', async () => {
    const closed: string[] = [];
    const { verifier, consumer, upstream, attempts } = await oneInFlight({
      failingTransactions: 1,
      onConsumerClose: () => void closed.push('consumer'),
    });
    await consumer.eachBatch(batchOf(1, [0]));
    upstream.release(1);
    await expect(verifier.done).rejects.toThrow('TOPIC_AUTHORIZATION_FAILED');
    // The caller closes the API client next: a call still running would end there as FAILED.
    expect(closed).toEqual(['consumer']);
    expect(upstream.aborted).toEqual([0]);
    await consumer.eachBatch(batchOf(1, [1]));
    expect(upstream.held).toHaveLength(2);
    expect(attempts).toHaveLength(1);
  });

  it("still ends with its failure when stop() comes during the failure's teardown (a SIGTERM then)", async () => {
    const closing = Promise.withResolvers<void>();
    const closed = Promise.withResolvers<void>();
    const { verifier, consumer, upstream } = await oneInFlight({
      failingTransactions: 1,
      onConsumerClose: () => {
        closing.resolve();
        return closed.promise;
      },
    });
    await consumer.eachBatch(batchOf(1, [0]));
    upstream.release(1);
    await closing.promise;
    const stopped = verifier.stop();
    closed.resolve();
    await stopped;
    await expect(verifier.done).rejects.toThrow('TOPIC_AUTHORIZATION_FAILED');
  });

  it('ends with its failure also when its consumer never closes (a broker gone silent), after failCloseMs', async () => {
    const { verifier, consumer, upstream } = await oneInFlight({
      failingTransactions: 1,
      failCloseMs: 50,
      onConsumerClose: () => new Promise(() => {}),
    });
    await consumer.eachBatch(batchOf(1, [0]));
    upstream.release(1);
    await expect(verifier.done).rejects.toThrow('TOPIC_AUTHORIZATION_FAILED');
    expect(upstream.aborted).toEqual([0]);
  });

  it('stops within its drain timeout: what finished is committed, a call still in flight is ended and left for the next owner', async () => {
    // Request 0 is never answered.
    const { verifier, consumer, transactions, upstream, metrics } = await oneInFlight({ drainTimeoutMs: 50 });
    await consumer.eachBatch(batchOf(1, [0]));
    upstream.release(1);
    await verifier.stop();
    expect(upstream.aborted).toEqual([0]);
    expect(transactions).toEqual([{ keys: ['r-1-0'], offsets: [{ partition: 1, offset: '1' }] }]);
    // The request left unanswered is not counted (as FAILED) either.
    const counted = (await metrics.requests.get()).values.map((v) => [v.labels.outcome, v.value]);
    expect(counted).toEqual([['COMPLETED', 1]]);
  });
});

describe('verifier reply topics the broker refuses', () => {
  const custom = 'vop.verification.replies.team-a';
  /** kafkajs's error once the topic's ACL refuses this producer, its topic named (topic-errors.ts). */
  const refusedBy = (topic: string) => (records: OutgoingRecord[]) =>
    records.some((r) => r.topic === topic)
      ? Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), {
          type: 'TOPIC_AUTHORIZATION_FAILED',
          topicErrors: [{ topic, partition: 0, type: 'TOPIC_AUTHORIZATION_FAILED' }],
        })
      : undefined;
  /** A batch of partition 0's requests at `offsets`, each asking for `replyTopic`. */
  const asking = (replyTopic: string, offsets: number[]): ConsumedBatch => {
    const batch = batchOf(0, offsets);
    for (const r of batch.records) r.headers.kafka_replyTopic = Buffer.from(replyTopic);
    return batch;
  };

  it('redoes a transaction a custom reply topic refused for good, its replies on the default topic, and sends later ones there at once', async () => {
    let commit = Promise.withResolvers<void>();
    const { verifier, consumer, transactions, attempts, opened, metrics, upstream } = await oneInFlight({
      refusal: refusedBy(custom),
      transactionGate: async () => commit.resolve(),
    });
    upstream.release(0); // r-0-0, for the default topic
    await commit.promise;
    for (const offset of [1, 2]) {
      // r-0-1: refused, and redone on the default topic; r-0-2: there at once.
      commit = Promise.withResolvers<void>();
      await consumer.eachBatch(asking(custom, [offset]));
      upstream.release(offset);
      await commit.promise;
    }
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
    expect(transactions).toEqual([
      { keys: ['r-0-0'], offsets: [{ partition: 0, offset: '1' }] },
      { keys: ['r-0-1'], offsets: [{ partition: 0, offset: '2' }] },
      { keys: ['r-0-2'], offsets: [{ partition: 0, offset: '3' }] },
    ]);
    expect(attempts.map((records) => records.map((r) => `${r.key} ${r.topic}`))).toEqual([
      ['r-0-0 vop.verification.replies.v1'],
      [`r-0-1 ${custom}`],
      ['r-0-1 vop.verification.replies.v1'],
      ['r-0-2 vop.verification.replies.v1'],
    ]);
    expect((await metrics.refusedReplyTopics.get()).values[0]?.value).toBe(2);
    // The refused transaction's producer (the second) is replaced: on protocol v1 it could not go on.
    expect(opened).toEqual([
      'fraudlink-verifier-test',
      'fraudlink-verifier-test.1',
      'fraudlink-verifier-test.1',
    ]);
  });

  it('answers a request once when the consumer crashed during its refused transaction: its redo is dropped, not committed without a member, nor counted or warned as moved', async () => {
    const upstream = heldAnswers();
    const refused = Promise.withResolvers<void>();
    let crash = () => {};
    const out = logCapture();
    const { verifier, consumer, transactions, memberships, attempts, metrics } = await startedVerifier({
      verify: upstream.verify,
      logger: createLogger({ level: 'warn', destination: out.stream }),
      refusal(records) {
        const error = refusedBy(custom)(records);
        if (error) {
          // A coordinator that moved meanwhile: kafkajs restarts the consumer, which leaves the group,
          // and the verifier drops the requests in hand for the partitions' next owner to answer.
          crash();
          refused.resolve();
        }
        return error;
      },
    });
    crash = () => consumer.onCrash?.(new Error('The group coordinator is not available'), true);
    await consumer.eachBatch(asking(custom, [0]));
    upstream.release(0);
    await refused.promise;
    // kafkajs rejoins as a new member (after the transaction under way), and is handed r-0-0 again.
    await consumer.beforeJoin?.();
    const rejoined = { generationId: 2, memberId: 'member-2' };
    consumer.onAssignment?.([{ topic: 'requests', partitions: [0] }], rejoined);
    await consumer.eachBatch(asking(custom, [0]));
    upstream.release(1);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
    expect(attempts.map((records) => records.map((r) => `${r.key} ${r.topic}`))).toEqual([
      [`r-0-0 ${custom}`],
      ['r-0-0 vop.verification.replies.v1'],
    ]);
    expect(transactions).toEqual([{ keys: ['r-0-0'], offsets: [{ partition: 0, offset: '1' }] }]);
    expect(memberships).toEqual([rejoined]);
    // One reply moved to the default topic was committed, by the rejoined member: the redo given up
    // moved none for good.
    expect((await metrics.refusedReplyTopics.get()).values[0]?.value).toBe(1);
    expect(out.lines.filter((l) => l.requestId !== undefined).map((l) => [l.msg, l.requestId])).toEqual([
      ['kafka_replyTopic refused by the broker lately; replying on the default topic', 'r-0-0'],
    ]);
  });

  it('stops, as on any failed transaction, when the default reply topic refuses its records', async () => {
    const { verifier, transactions, upstream } = await oneInFlight({
      refusal: refusedBy('vop.verification.replies.v1'),
    });
    upstream.release(0);
    await expect(verifier.done).rejects.toThrow('Not authorized');
    await verifier.stop();
    expect(transactions).toEqual([]);
  });
});

/** A transaction the broker could not finish because it went away: ridden out. */
const brokerGone = () =>
  new KafkaError('commit replies: Connection error: connect ECONNREFUSED 127.0.0.1:9092', {
    retriable: true,
    cause: Object.assign(new Error('connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' }),
  });

describe('verifier outages', () => {
  it('stops at once when asked while waiting to restart after a failure whose consumer never closed', async () => {
    const { verifier, consumer, upstream, metrics } = await oneInFlight({
      failingTransactions: 1,
      transactionError: brokerGone,
      failCloseMs: 50,
      onConsumerClose: () => new Promise(() => {}),
      restartDelayMs: 60_000,
    });
    await consumer.eachBatch(batchOf(0, [1]));
    upstream.release(0);
    await vi.waitFor(async () => expect((await metrics.sessionRestarts.get()).values[0]?.value).toBe(1));

    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
  });

  it('restarts its Kafka session after a transaction the broker could not finish, not ready meanwhile, and answers the request the new session reads again', async () => {
    const committed = Promise.withResolvers<void>();
    const { verifier, consumer, consumers, upstream, opened, transactions, metrics, settled } =
      await oneInFlight({
        failingTransactions: 1,
        transactionError: brokerGone,
        transactionGate: async () => committed.resolve(),
      });
    upstream.release(0);
    await vi.waitFor(() => expect(consumers).toHaveLength(2));
    expect(settled.value).toBe(false);
    expect(verifier.ready()).toEqual({ ready: false, reason: 'kafka session restarting' });
    expect(verifier.healthy()).toBe(true);
    expect(opened).toEqual([
      'fraudlink-verifier-test',
      'fraudlink-verifier-test.1',
      'fraudlink-verifier-test',
      'fraudlink-verifier-test.1',
    ]);
    // The old session's consumer is gone: its callbacks hand out nothing more.
    await consumer.eachBatch(batchOf(0, [1]));
    expect(upstream.held).toHaveLength(1);
    const next = consumers[1] as GroupConsumerOptions;
    next.onAssignment?.([{ topic: 'requests', partitions: [0, 1] }], MEMBER);
    expect(verifier.ready()).toEqual({ ready: true });
    await next.eachBatch(batchOf(0, [0]));
    upstream.release(1);
    await committed.promise;
    await vi.waitFor(() =>
      expect(transactions).toEqual([{ keys: ['r-0-0'], offsets: [{ partition: 0, offset: '1' }] }]),
    );
    expect((await metrics.sessionRestarts.get()).values[0]?.value).toBe(1);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
  });

  it('restarts its session when kafkajs gives up on the consumer for a reason no operator causes', async () => {
    const { verifier, consumer, consumers, settled } = await startedVerifier();
    consumer.onCrash?.(
      Object.assign(new Error('Connection timeout'), { name: 'KafkaJSConnectionError' }),
      false,
    );
    await vi.waitFor(() => expect(consumers).toHaveLength(2));
    expect(settled.value).toBe(false);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
  });

  it('ends a restart backoff at once on stop(), with exit 0', async () => {
    const { verifier, consumer, consumers } = await startedVerifier();
    consumer.onCrash?.(new Error('broker gone'), false);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
    expect(consumers.length).toBeLessThanOrEqual(2);
  });
});

describe('verifier memory bounds', () => {
  it('pauses a partition holding its limit of finished replies behind a slow request, and resumes it once they commit', async () => {
    const { verifier, consumer, upstream, pauses, transactions, metrics } = await oneInFlight({
      heldReplyLimits: { partitionReplies: 2, partitionBytes: 1e9, totalReplies: 100, totalBytes: 1e9 },
    });
    await consumer.eachBatch(batchOf(0, [1, 2]));
    upstream.release(1);
    await vi.waitFor(() => expect(upstream.held).toHaveLength(3));
    expect(pauses).toEqual([]);
    upstream.release(2);
    await vi.waitFor(() => expect(pauses).toEqual(['pause 0']));
    expect((await metrics.pausedPartitions.get()).values[0]?.value).toBe(1);
    upstream.release(0);
    await vi.waitFor(() => expect(pauses).toEqual(['pause 0', 'resume 0']));
    expect(transactions.flatMap((t) => t.keys)).toEqual(['r-0-0', 'r-0-1', 'r-0-2']);
    expect((await metrics.pausedPartitions.get()).values[0]?.value).toBe(0);
    await verifier.stop();
  });

  it('pauses every partition holding replies once all of them together hold the total limit', async () => {
    const { verifier, consumer, upstream, pauses } = await oneInFlight({
      heldReplyLimits: { partitionReplies: 100, partitionBytes: 1e9, totalReplies: 2, totalBytes: 1e9 },
      drainTimeoutMs: 10,
    });
    await consumer.eachBatch(batchOf(1, [0, 1]));
    await consumer.eachBatch(batchOf(0, [1]));
    await vi.waitFor(() => expect(upstream.held).toHaveLength(4));
    upstream.release(2); // r-1-1, behind r-1-0
    await vi.waitFor(() => expect(upstream.held[2]).toBeDefined());
    expect(pauses).toEqual([]);
    upstream.release(3); // r-0-1, behind r-0-0
    await vi.waitFor(() => expect(pauses).toEqual(['pause 0,1']));
    await verifier.stop();
  });
});

describe('verifier liveness', () => {
  it('reports a consumer without a fetch, heartbeat or restart for LIVENESS_MS as hung, and a session riding out an outage as alive', async () => {
    let clock = 0;
    const { verifier, consumer } = await startedVerifier({ now: () => clock });
    expect(verifier.healthy()).toBe(true);
    clock += LIVENESS_MS - 1;
    consumer.onActivity?.();
    clock += LIVENESS_MS - 1;
    expect(verifier.healthy()).toBe(true);
    clock += 1;
    expect(verifier.healthy()).toBe(false);
    // kafkajs restarting a crashed consumer through its retries: a sign of life.
    consumer.onCrash?.(new Error('Connection error: connect ECONNREFUSED'), true);
    expect(verifier.healthy()).toBe(true);
    await verifier.stop();
  });

  it('stays alive however long it waits to restart its session, and a stop ends the wait at once', async () => {
    let clock = 0;
    const { verifier, consumer, consumers } = await startedVerifier({
      now: () => clock,
      restartDelayMs: 600_000,
    });
    consumer.onCrash?.(new Error('Connection error: connect ECONNREFUSED'), false);
    await vi.waitFor(() =>
      expect(verifier.ready()).toEqual({ ready: false, reason: 'kafka session restarting' }),
    );
    clock += 10 * LIVENESS_MS;
    expect(verifier.healthy()).toBe(true);
    await verifier.stop();
    await expect(verifier.done).resolves.toBeUndefined();
    expect(consumers).toHaveLength(1);
  });
});

describe('verifier liveness during start-up', () => {
  it('counts each start attempt of a start-up waiting out an outage as a sign of life', async () => {
    let clock = 0;
    let refusals = Number.POSITIVE_INFINITY;
    const kafka = {
      transactionalProducer: async () => {
        if (refusals > 0) {
          refusals--;
          throw new KafkaError('connect ECONNREFUSED', { retriable: true });
        }
        return { transaction: async () => {}, close: async () => {} };
      },
      groupConsumer: () => ({
        start: async () => {},
        pause: () => {},
        resume: () => {},
        membership: () => MEMBER,
        close: async () => {},
      }),
    } as unknown as KafkaClient;
    const config = testConfig();
    const verifier = createVerifier({
      kafka,
      transactionalId: 'fraudlink-verifier-test',
      ...testHandlerDeps(config.verifier),
      now: () => clock,
    });
    // Start-up's own loop (start-up.ts outlasting) calls start() again after each backoff.
    for (let attempt = 0; attempt < 3; attempt++) {
      clock += LIVENESS_MS - 1;
      await expect(verifier.start()).rejects.toThrow(/ECONNREFUSED/);
      expect(verifier.healthy()).toBe(true);
    }
    await verifier.stop();
  });
});
