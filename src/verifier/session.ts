import { ErrorCodes, findError } from '../errors.ts';
import type { OutgoingRecord } from '../kafka/index.ts';
import { recordBytes } from '../kafka/records.ts';
import { settledWithin } from '../retry.ts';
import { GroupCommit } from './group-commit.ts';
import { type HandlerDeps, handleRequest } from './handle.ts';
import { HELD_REPLY_LIMITS, HeldReplies, type PartitionPauser } from './held-replies.ts';
import { ProducerTurns } from './producer-turns.ts';
import { PartitionProgress } from './progress.ts';
import { type RefusedReplyTopics, transactionAvoidingRefusedTopics } from './refused-topics.ts';
import { SessionLifecycle, type SessionView } from './session-state.ts';
import type { Slots } from './slots.ts';
import type { VerifierDeps } from './verifier.ts';

/** What the sessions of one verifier share: the slots, refused topics and signs of life. */
export interface SessionContext {
  deps: VerifierDeps;
  slots: Slots;
  handlerDeps: HandlerDeps;
  /** The consumer showed a sign of life. */
  alive(): void;
  /** A transaction committed. */
  progressed(): void;
}

/**
 * One Kafka session: a consumer and two transactional producers. `ended` resolves once it has
 * ended and closed its clients: with the failure that ended it, or undefined after stop().
 */
export interface Session {
  start(signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  readonly ended: Promise<unknown>;
  /** Where it stands: joined, rejoining, and since when. */
  readonly lifecycle: SessionView;
}

/**
 * How long a stop waits for the verifications in flight: 20 s, inside the 30 s grace Kubernetes
 * (and the chart) give a pod after SIGTERM, leaving time to commit and leave the group. Requests
 * due later than that (long deadlines, a slow upstream) are left unanswered and uncommitted: the
 * instance that takes their partitions answers them. The chart refuses a verifier grace under this
 * plus 5 s (verifier-deployment.yaml; test/ship/helm.test.ts keeps the two in step).
 */
export const DRAIN_TIMEOUT_MS = 20_000;

/**
 * How long a failure waits for the verifications in flight to end (aborted), the consumer to leave
 * and the producers to close before `done` rejects all the same: a broker that stopped answering, or
 * a registry decode that takes no signal, would otherwise hold the failing process for their
 * timeouts. Nothing is handed out meanwhile either way.
 */
const FAIL_CLOSE_MS = 10_000;

/**
 * One session of the verifier: consumes requests, verifies many at once, and commits replies
 * together with the consumed offsets in one transaction. Transactions are group commits
 * (group-commit.ts): whatever finished while the previous one was committing goes into the next, so
 * throughput grows with load and latency stays low when idle. They start at least
 * VERIFY_COMMIT_INTERVAL_MS apart: each costs the verifier and the broker three requests (five on
 * Kafka's transaction protocol v1) and the markers whatever it carries, and at 200 requests/s one
 * transaction per reply kept both busy enough to stretch every request's latency.
 */
export function createSession({ deps, slots, handlerDeps, alive, progressed }: SessionContext): Session {
  const { config, logger } = deps;
  const progress = new PartitionProgress<OutgoingRecord>(recordBytes);
  const producers = new ProducerTurns(
    [deps.transactionalId, `${deps.transactionalId}.1`],
    (transactionalId, signal) =>
      deps.kafka.transactionalProducer({ transactionalId, transactionTimeoutMs: 15_000, signal }),
  );
  const refusedTopics = handlerDeps.refusedReplyTopics as RefusedReplyTopics;
  const now = deps.now ?? (() => performance.now());
  const lifecycle = new SessionLifecycle();
  const inFlight = new Set<Promise<void>>();
  /** Ends the upstream calls a stop could not wait for, or that a failure made pointless. */
  const abandon = new AbortController();
  const ended = Promise.withResolvers<unknown>();

  /**
   * A failure of the session (a failed transaction, refused credentials, a consumer gone for good):
   * nothing more is handed out or committed, what is in hand is dropped and the upstream calls in
   * flight are ended, unanswered, to be read again from the committed offsets by the next session or
   * the partitions' next owner. `ended` resolves with the failure once the consumer has left and
   * the producers are closed: after a fatal one the caller closes the API client, and a request
   * handed out meanwhile would end at its closed dispatcher as a FAILED reply the upstream never saw.
   */
  const fail = (err: unknown): void => {
    if (!lifecycle.fail()) return;
    progress.retain(() => false);
    abandon.abort();
    const waitedMs = deps.failCloseMs ?? FAIL_CLOSE_MS;
    const tornDown = Promise.allSettled([...inFlight])
      .then(closeClients)
      .then(() => true);
    void settledWithin(tornDown, waitedMs).then((closed) => {
      if (!closed) logger.warn({ waitedMs }, "the failure's teardown did not end in time: ending without it");
      ended.resolve(err);
    });
  };

  /** One transaction: the replies finished so far, with the offsets that cover them. */
  const commitFinished = async (): Promise<void> => {
    const { records, offsets } = progress.takeCommittable();
    if (offsets.length === 0) return;
    // Taken out of `progress`: they are this transaction's now, committed or lost with it.
    held.review();
    const started = performance.now();
    const turn = producers.next();
    // Read once, as the requests were consumed, for every attempt of this commit: a consumer that
    // crashed meanwhile has left the group and has no membership, and offsets sent without one are
    // not checked by the coordinator, though the crash dropped these requests for their partitions'
    // next owner to answer. As the member it was, the coordinator refuses them once it is gone.
    const membership = consumer.membership();
    const consumedAs = lifecycle.member;
    let committed: boolean;
    try {
      committed = await transactionAvoidingRefusedTopics(records, refusedTopics, deps, {
        transaction: (sent, unbatchedTopics) =>
          producers.transaction(turn, sent, {
            consumerOffsets: { groupId: config.groupId, offsets, membership },
            unbatchedTopics,
          }),
        // On Kafka's transaction protocol v1 a producer whose Produce failed must not begin another
        // transaction (eos-manager.ts): a new one with the same transactional id takes its place.
        renewProducer: () => producers.renew(turn),
        // The consumer crashed since (onCrash dropped these requests): no attempt is made any more.
        dropped: () => lifecycle.member !== consumedAs,
      });
    } catch (err) {
      if (!findError(err, ErrorCodes.KAFKA_MEMBER_FENCED)) throw err;
      // Cut off from the group (its session expired during a pause) while other members took its
      // partitions and answer their requests from the committed offsets: the transaction was
      // aborted, and everything in hand is dropped, also what a rejoin gives back (onAssignment).
      // kafkajs finds out at its next heartbeat and rejoins.
      logger.warn(
        { err, aborted: records.length, inFlight: progress.inFlight },
        'this member was cut off from its group: its replies are dropped, for the owners of its ' +
          'partitions to answer',
      );
      deps.metrics.memberFenced.inc();
      dropInHand();
      return;
    }
    if (!committed) {
      logger.warn(
        { dropped: records.length },
        'the request consumer crashed during this commit (a refused transaction redone): its ' +
          'replies are dropped, for the owners of its partitions to answer',
      );
      return;
    }
    deps.metrics.commitSeconds.observe((performance.now() - started) / 1000);
    progressed();
  };

  const commits = new GroupCommit({
    commit: commitFinished,
    intervalMs: config.commitIntervalMs,
    onError: (err) => {
      logger.error({ err }, 'committing replies failed; ending the Kafka session');
      fail(err);
    },
  });

  const consumer = deps.kafka.groupConsumer({
    groupId: config.groupId,
    topics: [config.requestsTopic],
    isolation: 'read_committed',
    fromBeginning: true,
    autoCommit: false,
    maxWaitMs: 100,
    partitionsConsumedConcurrently: Math.max(1, config.partitions),
    onActivity: alive,
    // kafkajs rebalances eagerly: every member rejoins, and the new owners read the committed
    // offsets once all have. The transaction under way finishes first and none starts until the
    // new assignment, so none of the old assignment commits after a new owner read its offsets.
    beforeJoin: () => commits.pause(),
    onAssignment(assigned, membership) {
      // The join a closing consumer waits for (kafkajs lets a join under way finish before it leaves
      // the group): the member leaves at once, commits stay paused, and what it has in hand is left
      // for the partitions' next owner. A transaction started here would be cut off by the producers'
      // close and stay open until its timeout, holding back read_committed readers of its partitions.
      if (lifecycle.leaving) {
        dropInHand();
        return;
      }
      const owned = new Set(assigned.flatMap((a) => a.partitions.map((p) => `${a.topic}/${p}`)));
      // A member keeps its partitions' requests in hand only if it stayed in the group throughout.
      // A new member id means it was cut off (kafkajs rejoins as a new member then), and another
      // member may have answered and committed them meanwhile.
      const stayed = membership !== undefined && membership.memberId === lifecycle.member;
      progress.retain((topic, partition) => stayed && owned.has(`${topic}/${partition}`));
      held.review();
      lifecycle.assigned(membership?.memberId, now());
      alive();
      commits.resume();
    },
    onCrash(err, restarting) {
      // kafkajs restarts the consumer after a retriable error (a coordinator still loading on a fresh
      // broker, a broker restart). It has left the group already, so its partitions may be someone
      // else's by now: nothing in flight is committed here (the owner after the rejoin answers it).
      if (!restarting) {
        fail(err);
        return;
      }
      dropInHand();
      lifecycle.consumerRestarting();
      // kafkajs working through its retries (a broker away) is not a hung consumer.
      alive();
      logger.warn({ err }, 'the request consumer crashed; kafkajs restarts it');
    },
    eachBatch: async (batch) => {
      const handingOut = () => lifecycle.handsOut && batch.isRunning() && !batch.isStale();
      for (const record of batch.records) {
        if (!handingOut()) return;
        await slots.acquireHeartbeating(async () => {
          await batch.heartbeat();
          alive();
        });
        // stop() or a rebalance may have come while this batch waited for the slot.
        if (!handingOut()) {
          slots.release();
          return;
        }
        const dispatched = progress.dispatch(record.topic, record.partition, record.offset);
        if (!dispatched) {
          // Delivered again after a rebalance: it is in flight or answered already.
          slots.release();
          continue;
        }
        const work = handleRequest(record, handlerDeps, abandon.signal)
          .then((records) => {
            // false: the partition was reassigned meanwhile, and its new owner answers this request.
            if (!progress.complete(dispatched, records)) return;
            held.finished(record);
            commits.request();
          })
          .catch((err: unknown) => {
            logger.error({ err, offset: record.offset }, handlingFailureMessage(err));
            fail(err);
          })
          .finally(() => {
            slots.release();
            inFlight.delete(work);
          });
        inFlight.add(work);
      }
    },
  });

  const held = heldRepliesOf(progress, consumer, deps);

  /**
   * Closes the consumer, then the producers once the transaction under way, if any, has ended: none
   * starts after the consumer has left. Once, for stop() and a failure alike.
   */
  const closeClients = (): Promise<void> =>
    lifecycle.leave(async () => {
      await consumer.close().catch(() => {});
      // Its pauses end with the consumer.
      deps.metrics.pausedPartitions.dec(held.pausedCount);
      await commits.pause();
      await producers.close();
    });

  /** Drops the requests in hand, for the partitions' next owner to answer. */
  const dropInHand = (): void => {
    progress.retain(() => false);
    held.review();
    lifecycle.droppedInHand();
  };

  return {
    ended: ended.promise,
    async start(signal) {
      try {
        await producers.open(signal);
        await consumer.start(signal);
      } catch (err) {
        lifecycle.stop();
        await closeClients();
        throw err;
      }
    },
    async stop() {
      lifecycle.stop();
      const drained = Promise.allSettled([...inFlight]).then(() => true);
      const allDone = await settledWithin(drained, deps.drainTimeoutMs ?? DRAIN_TIMEOUT_MS);
      await commits.flush();
      if (!allDone) {
        // What is still in flight stays uncommitted, for the partitions' next owner to answer.
        logger.warn(
          { inFlight: inFlight.size },
          'verifications still in flight at the drain timeout: left unanswered',
        );
        progress.retain(() => false);
        abandon.abort();
        await Promise.allSettled([...inFlight]);
        await commits.flush();
      }
      await closeClients();
      // A failure came first, or meanwhile: `ended` has its failure, once its teardown has ended.
      if (!lifecycle.hasFailed) ended.resolve(undefined);
      await ended.promise;
    },
    lifecycle,
  };
}

/** Why handling a request ended the session, as logged. */
function handlingFailureMessage(err: unknown): string {
  if (findError(err, 'UPSTREAM_UNAUTHORIZED')) return 'the upstream refused the API key; stopping';
  if (findError(err, 'CONFIG_INVALID')) return 'API_BASE_URL answers as the fraudlink sandbox; stopping';
  return 'handling a request failed; ending the Kafka session';
}

/** The session's held replies, their pauses and resumes counted and logged. */
function heldRepliesOf(
  progress: PartitionProgress<OutgoingRecord>,
  consumer: PartitionPauser,
  { heldReplyLimits, metrics, logger }: VerifierDeps,
): HeldReplies<OutgoingRecord> {
  return new HeldReplies({
    progress,
    limits: heldReplyLimits ?? HELD_REPLY_LIMITS,
    consumer,
    onChange({ paused, resumed, held: total }) {
      metrics.pausedPartitions.inc(paused.length - resumed.length);
      if (paused.length > 0) {
        logger.info(
          { paused: paused.map((p) => p.partition), held: total },
          'partitions paused: they hold as many finished replies, waiting for an earlier request to commit, as the limits allow',
        );
      } else {
        logger.info({ resumed: resumed.map((p) => p.partition), held: total }, 'partitions resumed');
      }
    },
  });
}
