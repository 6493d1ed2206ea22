import { ErrorCodes, findError } from '../errors.ts';
import type {
  ConsumedBatch,
  GroupConsumer,
  GroupMembership,
  IncomingRecord,
  OutgoingRecord,
} from '../kafka/index.ts';
import { recordBytes } from '../kafka/records.ts';
import { settledWithin } from '../retry.ts';
import { GroupCommit } from './group-commit.ts';
import { type HandlerDeps, handleRequest } from './handle.ts';
import { HELD_REPLY_LIMITS, HeldReplies, type PartitionPauser } from './held-replies.ts';
import { ProducerTurns } from './producer-turns.ts';
import { type Dispatched, PartitionProgress } from './progress.ts';
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
export function createSession(context: SessionContext): Session {
  return new VerifierSession(context);
}

class VerifierSession implements Session {
  readonly lifecycle = new SessionLifecycle();
  readonly #context: SessionContext;
  readonly #progress = new PartitionProgress<OutgoingRecord>(recordBytes);
  readonly #producers: ProducerTurns;
  readonly #commits: GroupCommit;
  readonly #consumer: GroupConsumer;
  readonly #held: HeldReplies<OutgoingRecord>;
  readonly #inFlight = new Set<Promise<void>>();
  /** Ends the upstream calls a stop could not wait for, or that a failure made pointless. */
  readonly #abandon = new AbortController();
  readonly #ended = Promise.withResolvers<unknown>();
  readonly #now: () => number;

  constructor(context: SessionContext) {
    this.#context = context;
    const { deps } = context;
    this.#now = deps.now ?? (() => performance.now());
    const { config, logger } = deps;
    this.#producers = new ProducerTurns(
      [deps.transactionalId, `${deps.transactionalId}.1`],
      (transactionalId, signal) =>
        deps.kafka.transactionalProducer({ transactionalId, transactionTimeoutMs: 15_000, signal }),
    );
    this.#commits = new GroupCommit({
      commit: () => this.#commitFinished(),
      intervalMs: config.commitIntervalMs,
      onError: (err) => {
        logger.error({ err }, 'committing replies failed; ending the Kafka session');
        this.#fail(err);
      },
    });
    this.#consumer = deps.kafka.groupConsumer({
      groupId: config.groupId,
      topics: [config.requestsTopic],
      isolation: 'read_committed',
      fromBeginning: true,
      autoCommit: false,
      maxWaitMs: 100,
      partitionsConsumedConcurrently: Math.max(1, config.partitions),
      onActivity: context.alive,
      // kafkajs rebalances eagerly: every member rejoins, and the new owners read the committed
      // offsets once all have. The transaction under way finishes first and none starts until the
      // new assignment, so none of the old assignment commits after a new owner read its offsets.
      beforeJoin: () => this.#commits.pause(),
      onAssignment: (assigned, membership) => this.#onAssignment(assigned, membership),
      onCrash: (err, restarting) => this.#onCrash(err, restarting),
      eachBatch: (batch) => this.#eachBatch(batch),
    });
    this.#held = heldRepliesOf(this.#progress, this.#consumer, deps);
  }

  /** Resolves once the session has ended and closed its clients: with its failure, or undefined. */
  get ended(): Promise<unknown> {
    return this.#ended.promise;
  }

  async start(signal?: AbortSignal): Promise<void> {
    try {
      await this.#producers.open(signal);
      await this.#consumer.start(signal);
    } catch (err) {
      this.lifecycle.stop();
      await this.#closeClients();
      throw err;
    }
  }

  async stop(): Promise<void> {
    const { deps } = this.#context;
    // A failed session has ended its calls and is closing its clients for at most failCloseMs.
    if (this.lifecycle.hasFailed) {
      await this.#ended.promise;
      return;
    }
    this.lifecycle.stop();
    const drained = Promise.allSettled([...this.#inFlight]).then(() => true);
    const allDone = await settledWithin(drained, deps.drainTimeoutMs ?? DRAIN_TIMEOUT_MS);
    await this.#commits.flush();
    if (!allDone) {
      // What is still in flight stays uncommitted, for the partitions' next owner to answer.
      deps.logger.warn(
        { inFlight: this.#inFlight.size },
        'verifications still in flight at the drain timeout: left unanswered',
      );
      this.#progress.retain(() => false);
      this.#abandon.abort();
      await Promise.allSettled([...this.#inFlight]);
      await this.#commits.flush();
    }
    // A failure meanwhile ends the wait as its own teardown does: within failCloseMs.
    await Promise.race([this.#closeClients(), this.#ended.promise]);
    // A failure came meanwhile: `ended` has its failure, once its teardown has ended.
    if (!this.lifecycle.hasFailed) this.#ended.resolve(undefined);
    await this.#ended.promise;
  }

  /**
   * A failure of the session (a failed transaction, refused credentials, a consumer gone for good):
   * nothing more is handed out or committed, what is in hand is dropped and the upstream calls in
   * flight are ended, unanswered, to be read again from the committed offsets by the next session or
   * the partitions' next owner. `ended` resolves with the failure once the consumer has left and
   * the producers are closed: after a fatal one the caller closes the API client, and a request
   * handed out meanwhile would end at its closed dispatcher as a FAILED reply the upstream never saw.
   */
  #fail(err: unknown): void {
    if (!this.lifecycle.fail()) return;
    const { deps } = this.#context;
    this.#progress.retain(() => false);
    this.#abandon.abort();
    const waitedMs = deps.failCloseMs ?? FAIL_CLOSE_MS;
    const tornDown = Promise.allSettled([...this.#inFlight])
      .then(() => this.#closeClients())
      .then(() => true);
    void settledWithin(tornDown, waitedMs).then((closed) => {
      if (!closed)
        deps.logger.warn({ waitedMs }, "the failure's teardown did not end in time: ending without it");
      this.#ended.resolve(err);
    });
  }

  /** One transaction: the replies finished so far, with the offsets that cover them. */
  async #commitFinished(): Promise<void> {
    const { deps } = this.#context;
    const { records, offsets } = this.#progress.takeCommittable();
    if (offsets.length === 0) return;
    // Taken out of `progress`: they are this transaction's now, committed or lost with it.
    this.#held.review();
    const started = performance.now();
    const turn = this.#producers.next();
    // Read once, as the requests were consumed, for every attempt of this commit: a consumer that
    // crashed meanwhile has left the group and has no membership, and offsets sent without one are
    // not checked by the coordinator, though the crash dropped these requests for their partitions'
    // next owner to answer. As the member it was, the coordinator refuses them once it is gone.
    const membership = this.#consumer.membership();
    const consumedAs = this.lifecycle.member;
    const refusedTopics = this.#context.handlerDeps.refusedReplyTopics as RefusedReplyTopics;
    let committed: boolean;
    try {
      committed = await transactionAvoidingRefusedTopics(records, refusedTopics, deps, {
        transaction: (sent, unbatchedTopics) =>
          this.#producers.transaction(turn, sent, {
            consumerOffsets: { groupId: deps.config.groupId, offsets, membership },
            unbatchedTopics,
          }),
        // On Kafka's transaction protocol v1 a producer whose Produce failed must not begin another
        // transaction (eos-manager.ts): a new one with the same transactional id takes its place.
        renewProducer: () => this.#producers.renew(turn),
        // The consumer crashed since (onCrash dropped these requests): no attempt is made any more.
        dropped: () => this.lifecycle.member !== consumedAs,
      });
    } catch (err) {
      if (!findError(err, ErrorCodes.KAFKA_MEMBER_FENCED)) throw err;
      // Cut off from the group (its session expired during a pause) while other members took its
      // partitions and answer their requests from the committed offsets: the transaction was
      // aborted, and everything in hand is dropped, also what a rejoin gives back (onAssignment).
      // kafkajs finds out at its next heartbeat and rejoins.
      deps.logger.warn(
        { err, aborted: records.length, inFlight: this.#progress.inFlight },
        'this member was cut off from its group: its replies are dropped, for the owners of its ' +
          'partitions to answer',
      );
      deps.metrics.memberFenced.inc();
      this.#dropInHand();
      return;
    }
    if (!committed) {
      deps.logger.warn(
        { dropped: records.length },
        'the request consumer crashed during this commit (a refused transaction redone): its ' +
          'replies are dropped, for the owners of its partitions to answer',
      );
      return;
    }
    deps.metrics.commitSeconds.observe((performance.now() - started) / 1000);
    this.#context.progressed();
  }

  #onAssignment(
    assigned: { topic: string; partitions: number[] }[],
    membership: GroupMembership | undefined,
  ): void {
    // The join a closing consumer waits for (kafkajs lets a join under way finish before it leaves
    // the group): the member leaves at once, commits stay paused, and what it has in hand is left
    // for the partitions' next owner. A transaction started here would be cut off by the producers'
    // close and stay open until its timeout, holding back read_committed readers of its partitions.
    if (this.lifecycle.leaving) {
      this.#dropInHand();
      return;
    }
    const owned = new Set(assigned.flatMap((a) => a.partitions.map((p) => `${a.topic}/${p}`)));
    // A member keeps its partitions' requests in hand only if it stayed in the group throughout.
    // A new member id means it was cut off (kafkajs rejoins as a new member then), and another
    // member may have answered and committed them meanwhile.
    const stayed = membership !== undefined && membership.memberId === this.lifecycle.member;
    this.#progress.retain((topic, partition) => stayed && owned.has(`${topic}/${partition}`));
    this.#held.review();
    this.lifecycle.assigned(membership?.memberId, this.#now());
    this.#context.alive();
    this.#commits.resume();
  }

  #onCrash(err: Error, restarting: boolean): void {
    // kafkajs restarts the consumer after a retriable error (a coordinator still loading on a fresh
    // broker, a broker restart). It has left the group already, so its partitions may be someone
    // else's by now: nothing in flight is committed here (the owner after the rejoin answers it).
    if (!restarting) {
      this.#fail(err);
      return;
    }
    this.#dropInHand();
    this.lifecycle.consumerRestarting();
    // kafkajs working through its retries (a broker away) is not a hung consumer.
    this.#context.alive();
    this.#context.deps.logger.warn({ err }, 'the request consumer crashed; kafkajs restarts it');
  }

  async #eachBatch(batch: ConsumedBatch): Promise<void> {
    const { slots, alive } = this.#context;
    const handingOut = () => this.lifecycle.handsOut && batch.isRunning() && !batch.isStale();
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
      const dispatched = this.#progress.dispatch(record.topic, record.partition, record.offset);
      if (!dispatched) {
        // Delivered again after a rebalance: it is in flight or answered already.
        slots.release();
        continue;
      }
      this.#handOut(record, dispatched);
    }
  }

  /** Verifies `record`, its slot taken: its replies join the next commit once it is answered. */
  #handOut(record: IncomingRecord, dispatched: Dispatched<OutgoingRecord>): void {
    const { slots, handlerDeps, deps } = this.#context;
    const work = handleRequest(record, handlerDeps, this.#abandon.signal)
      .then((records) => {
        // false: the partition was reassigned meanwhile, and its new owner answers this request.
        if (!this.#progress.complete(dispatched, records)) return;
        this.#held.finished(record);
        this.#commits.request();
      })
      .catch((err: unknown) => {
        deps.logger.error({ err, offset: record.offset }, handlingFailureMessage(err));
        this.#fail(err);
      })
      .finally(() => {
        slots.release();
        this.#inFlight.delete(work);
      });
    this.#inFlight.add(work);
  }

  /**
   * Closes the consumer, then the producers once the transaction under way, if any, has ended: none
   * starts after the consumer has left. Once, for stop() and a failure alike.
   */
  #closeClients(): Promise<void> {
    return this.lifecycle.leave(async () => {
      await this.#consumer.close().catch(() => {});
      // Its pauses end with the consumer.
      this.#context.deps.metrics.pausedPartitions.dec(this.#held.pausedCount);
      await this.#commits.pause();
      await this.#producers.close();
    });
  }

  /** Drops the requests in hand, for the partitions' next owner to answer. */
  #dropInHand(): void {
    this.#progress.retain(() => false);
    this.#held.review();
    this.lifecycle.droppedInHand();
  }
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
