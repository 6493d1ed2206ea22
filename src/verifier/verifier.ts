import { AbortedError, ErrorCodes, findError } from '../errors.ts';
import type { ConsumedBatch, KafkaClient, OutgoingRecord, TransactionalProducer } from '../kafka/index.ts';
import { recordBytes } from '../kafka/records.ts';
import type { Logger } from '../logger.ts';
import { backoffDelay, OUTAGE_RETRY_POLICY, type RetryPolicy, settledWithin, sleep } from '../retry.ts';
import { GroupCommit } from './group-commit.ts';
import { type HandlerDeps, handleRequest } from './handle.ts';
import { HELD_REPLY_LIMITS, HeldReplies, type HeldReplyLimits } from './held-replies.ts';
import { isPlatformFailure } from './platform-failure.ts';
import { PartitionProgress } from './progress.ts';
import { RefusedReplyTopics, transactionAvoidingRefusedTopics } from './refused-topics.ts';

export interface VerifierDeps extends HandlerDeps {
  kafka: KafkaClient;
  /** Stable per instance, so a restarted instance fences its former self and settles its open transaction. */
  transactionalId: string;
  logger: Logger;
  /** How long stop() waits for verifications in flight (default DRAIN_TIMEOUT_MS). */
  drainTimeoutMs?: number;
  /** How long a failure waits for the Kafka clients to close (default FAIL_CLOSE_MS). */
  failCloseMs?: number;
  /** When partitions are paused for the replies they hold (default HELD_REPLY_LIMITS). */
  heldReplyLimits?: HeldReplyLimits;
  /** The backoff between restarts of the Kafka session (default SESSION_RESTART_POLICY). */
  restartPolicy?: RetryPolicy;
  /** For tests: the clock of the liveness check. */
  now?: () => number;
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
 * How long a custom reply topic that refused a transaction for good stays refused: 5 minutes, and
 * one whose subject the registry refused the reply schema. Its owner's fix (an ACL, a topic setting,
 * the subject's schema) is noticed that much later at worst, and each retry of a topic still refused
 * costs one failed transaction, or a registry round trip.
 */
export const REFUSED_REPLY_TOPIC_MS = 5 * 60_000;

export interface Verifier {
  /**
   * Opens the producers and joins the group; `signal` ends it at once (AbortedError). Closes what it
   * opened before it rejects.
   */
  start(signal?: AbortSignal): Promise<void>;
  /** Stops reading, lets in-flight requests finish and commits their replies. */
  stop(): Promise<void>;
  /**
   * Rejects when the verifier fails for good (fenced, credentials refused: isPlatformFailure), once
   * it has stopped handing out requests, ended the upstream calls in flight unanswered and closed
   * its consumer and producers; resolves after stop(). Any other failure restarts the Kafka session.
   */
  readonly done: Promise<void>;
  /** Readiness: the session has joined its group and serves requests. */
  ready(): { ready: boolean; reason?: string };
  /**
   * Liveness: false once the consumer has neither started a fetch, sent a heartbeat nor been
   * waiting to restart its session for LIVENESS_MS (a wedged consumer or event loop); true while an
   * outage is ridden out.
   */
  healthy(): boolean;
}

/** The backoff between restarts of the Kafka session after a failure: an outage's (1 s to 30 s). */
export const SESSION_RESTART_POLICY: Readonly<RetryPolicy> = OUTAGE_RETRY_POLICY;

/**
 * A session joined this long without failing counts as healthy: the next failure starts the
 * backoff again from its shortest wait, as a commit does.
 */
const SESSION_HEALTHY_AFTER_MS = 60_000;

/**
 * How long the consumer may go without a sign of life (a fetch started, a heartbeat sent, a restart
 * waited for or begun) before /healthz reports it hung: kafkajs fetches at least every
 * maxWaitMs (100 ms) and heartbeats every second, and a session start that connects through
 * kafkajs's retries takes well under a minute.
 */
export const LIVENESS_MS = 120_000;

/** How often a batch waiting for a free slot heartbeats (the consumer's heartbeat interval). */
const HEARTBEAT_WHILE_WAITING_MS = 1000;

/**
 * How long a failure waits for the verifications in flight to end (aborted), the consumer to leave
 * and the producers to close before `done` rejects all the same: a broker that stopped answering, or
 * a registry decode that takes no signal, would otherwise hold the failing process for their
 * timeouts. Nothing is handed out meanwhile either way.
 */
const FAIL_CLOSE_MS = 10_000;

/** A counting semaphore: bounds the requests in flight (VERIFY_CONCURRENCY). */
class Slots {
  #free: number;
  #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  /** Takes a slot if one is free. */
  tryAcquire(): boolean {
    if (this.#free === 0) return false;
    this.#free--;
    return true;
  }
  async acquire(): Promise<void> {
    if (this.tryAcquire()) return;
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }
  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

/** What the sessions of one verifier share: the slots, refused topics and signs of life. */
interface SessionContext {
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
interface Session {
  start(signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  readonly ended: Promise<unknown>;
  joined(): boolean;
  /** Its consumer crashed and kafkajs is restarting it (it rejoins by itself). */
  rejoining(): boolean;
  /** When the session last joined its group, or undefined while it has not. */
  joinedAt(): number | undefined;
}

/**
 * One session of the verifier: consumes requests, verifies many at once, and commits replies together
 * with the consumed offsets in one transaction. Transactions are group commits (group-commit.ts): whatever finished while the
 * previous one was committing goes into the next, so throughput grows with load and latency stays low
 * when idle. They start at least VERIFY_COMMIT_INTERVAL_MS apart: each costs the verifier and the
 * broker three requests (five on Kafka's transaction protocol v1) and the markers whatever it
 * carries, and at 200 requests/s one transaction per reply kept both busy enough to stretch every
 * request's latency.
 */
function createSession({ deps, slots, handlerDeps, alive, progressed }: SessionContext): Session {
  const { config, logger } = deps;
  const progress = new PartitionProgress<OutgoingRecord>(recordBytes);
  // Two transactional producers take turns. After EndTxn the broker still writes the transaction's
  // markers, and a producer that begins its next transaction at once is answered
  // CONCURRENT_TRANSACTIONS and backs off: with back-to-back group commits that was most of the
  // commit time. The other producer's id has no transaction in completion. Transactions still run
  // one after another, so each one's consumer offsets are appended after the previous one's, and the
  // group coordinator keeps the offset appended last whatever order the markers arrive in.
  let producers: TransactionalProducer[] = [];
  const transactionalIds = [deps.transactionalId, `${deps.transactionalId}.1`];
  const openProducer = (transactionalId: string, signal?: AbortSignal) =>
    deps.kafka.transactionalProducer({ transactionalId, transactionTimeoutMs: 15_000, signal });
  let turn = 0;
  const refusedTopics = handlerDeps.refusedReplyTopics as RefusedReplyTopics;
  const now = deps.now ?? (() => performance.now());
  let stopping = false;
  /** The consumer is being closed: it leaves the group, also after a join it finishes meanwhile. */
  let leaving = false;
  let joined = false;
  let rejoining = false;
  let joinedAt: number | undefined;
  /**
   * The member id that the requests in `progress` were consumed under; undefined once they are
   * dropped for good (a crash, or this member cut off from the group).
   */
  let memberId: string | undefined;
  const inFlight = new Set<Promise<void>>();
  /** Ends the upstream calls a stop could not wait for, or that a failure made pointless. */
  const abandon = new AbortController();
  let failed = false;
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
    if (failed) return;
    failed = true;
    stopping = true;
    joined = false;
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
    const slot = turn++ % producers.length;
    // Read once, as the requests were consumed, for every attempt of this commit: a consumer that
    // crashed meanwhile has left the group and has no membership, and offsets sent without one are
    // not checked by the coordinator, though the crash dropped these requests for their partitions'
    // next owner to answer. As the member it was, the coordinator refuses them once it is gone.
    const membership = consumer.membership();
    const consumedAs = memberId;
    let committed: boolean;
    try {
      committed = await transactionAvoidingRefusedTopics(records, refusedTopics, deps, {
        transaction: (sent, unbatchedTopics) =>
          producers[slot]?.transaction(sent, {
            consumerOffsets: { groupId: config.groupId, offsets, membership },
            unbatchedTopics,
          }),
        // On Kafka's transaction protocol v1 a producer whose Produce failed must not begin another
        // transaction (eos-manager.ts): a new one with the same transactional id takes its place.
        async renewProducer() {
          await producers[slot]?.close().catch(() => {});
          producers[slot] = await openProducer(transactionalIds[slot] as string);
        },
        // The consumer crashed since (onCrash dropped these requests): no attempt is made any more.
        dropped: () => memberId !== consumedAs,
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
      progress.retain(() => false);
      held.review();
      memberId = undefined;
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

  /**
   * A free slot, heartbeating while none is: the member heartbeats by itself only between batches,
   * and a batch waiting here longer than the session timeout (a slow upstream, long deadlines) would
   * get it evicted while it still answers its partitions' requests, which their next owner answers
   * too.
   */
  const slotFor = async (batch: ConsumedBatch): Promise<void> => {
    if (slots.tryAcquire()) return;
    const slot = slots.acquire().then(() => true);
    for (;;) {
      if (await settledWithin(slot, HEARTBEAT_WHILE_WAITING_MS)) return;
      try {
        await batch.heartbeat();
        alive();
      } catch (err) {
        // Rebalancing: the batch ends and the member rejoins; the slot, once free, is given back.
        void slot.then(() => slots.release());
        throw err;
      }
    }
  };

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
      if (leaving) {
        progress.retain(() => false);
        held.review();
        memberId = undefined;
        return;
      }
      const owned = new Set(assigned.flatMap((a) => a.partitions.map((p) => `${a.topic}/${p}`)));
      // A member keeps its partitions' requests in hand only if it stayed in the group throughout.
      // A new member id means it was cut off (kafkajs rejoins as a new member then), and another
      // member may have answered and committed them meanwhile.
      const stayed = membership !== undefined && membership.memberId === memberId;
      progress.retain((topic, partition) => stayed && owned.has(`${topic}/${partition}`));
      held.review();
      memberId = membership?.memberId;
      joined = true;
      rejoining = false;
      joinedAt ??= now();
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
      progress.retain(() => false);
      held.review();
      memberId = undefined;
      joined = false;
      rejoining = true;
      // kafkajs working through its retries (a broker away) is not a hung consumer.
      alive();
      logger.warn({ err }, 'the request consumer crashed; kafkajs restarts it');
    },
    eachBatch: async (batch) => {
      const handingOut = () => !stopping && batch.isRunning() && !batch.isStale();
      for (const record of batch.records) {
        if (!handingOut()) return;
        await slotFor(batch);
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
            logger.error(
              { err, offset: record.offset },
              findError(err, 'UPSTREAM_UNAUTHORIZED')
                ? 'the upstream refused the API key; stopping'
                : findError(err, 'CONFIG_INVALID')
                  ? 'API_BASE_URL answers as the fraudlink sandbox; stopping'
                  : 'handling a request failed; ending the Kafka session',
            );
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

  const held = new HeldReplies({
    progress,
    limits: deps.heldReplyLimits ?? HELD_REPLY_LIMITS,
    consumer,
    onChange({ paused, resumed, held: total }) {
      deps.metrics.pausedPartitions.inc(paused.length - resumed.length);
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

  /**
   * Closes the consumer, then the producers once the transaction under way, if any, has ended: none
   * starts after the consumer has left. Once, for stop() and a failure alike.
   */
  let closing: Promise<void> | undefined;
  const closeClients = (): Promise<void> =>
    (closing ??= (async () => {
      leaving = true;
      await consumer.close().catch(() => {});
      // Its pauses end with the consumer.
      deps.metrics.pausedPartitions.dec(held.pausedCount);
      await commits.pause();
      await Promise.allSettled(producers.map((p) => p.close()));
    })());

  return {
    ended: ended.promise,
    async start(signal) {
      const created = await Promise.allSettled(transactionalIds.map((id) => openProducer(id, signal)));
      producers = created.flatMap((c) => (c.status === 'fulfilled' ? [c.value] : []));
      const refused = created.find((c) => c.status === 'rejected');
      try {
        if (refused) throw refused.reason;
        await consumer.start(signal);
      } catch (err) {
        stopping = true;
        await closeClients();
        throw err;
      }
    },
    async stop() {
      stopping = true;
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
      if (!failed) ended.resolve(undefined);
      await ended.promise;
    },
    joined: () => joined && !stopping,
    rejoining: () => rejoining && !stopping,
    joinedAt: () => joinedAt,
  };
}

/** Where the verifier stands, for readiness and liveness. */
type Phase =
  | { name: 'starting' }
  | { name: 'running' }
  | { name: 'restarting'; waiting: boolean }
  | { name: 'stopping' }
  | { name: 'failed' };

/**
 * Consumes requests, verifies many at once, and commits replies together with the consumed offsets
 * in one transaction (a session: createSession). A session that fails for a reason no operator
 * needs to fix (a broker or registry outage, a consumer kafkajs gave up on, a transaction the broker
 * could not finish) is closed and replaced by a new one after a backoff (SESSION_RESTART_POLICY),
 * however long the outage lasts: what the failed session had in hand was not committed, and the new
 * one reads it again from the committed offsets, so each request still gets exactly one reply. Only
 * a platform failure (isPlatformFailure) ends the verifier.
 */
export function createVerifier(deps: VerifierDeps): Verifier {
  const { config, logger } = deps;
  const now = deps.now ?? (() => performance.now());
  const slots = new Slots(config.concurrency);
  const refusedTopics = deps.refusedReplyTopics ?? new RefusedReplyTopics(REFUSED_REPLY_TOPIC_MS);
  const handlerDeps: HandlerDeps = { ...deps, refusedReplyTopics: refusedTopics };
  const stopRequested = new AbortController();
  let phase: Phase = { name: 'starting' };
  let lastSignOfLife = now();
  let session: Session | undefined;
  let restarted = false;
  /** Failed sessions since one last committed or stayed joined for SESSION_HEALTHY_AFTER_MS. */
  let failures = 0;
  let supervising: Promise<void> | undefined;
  const context: SessionContext = {
    deps,
    slots,
    handlerDeps,
    alive: () => {
      lastSignOfLife = now();
    },
    progressed: () => {
      failures = 0;
    },
  };
  const done = Promise.withResolvers<void>();
  done.promise.catch(() => {});

  const openSession = async (signal?: AbortSignal): Promise<Session> => {
    const next = createSession(context);
    session = next;
    await next.start(signal);
    return next;
  };

  /** The restarts after `failure`, until a session starts: undefined when a stop ended them. */
  const restart = async (failure: unknown): Promise<Session | undefined> => {
    let err = failure;
    for (;;) {
      if (stopRequested.signal.aborted) return undefined;
      if (isPlatformFailure(err)) throw err;
      failures++;
      const delayMs = backoffDelay(failures, deps.restartPolicy ?? SESSION_RESTART_POLICY);
      deps.metrics.sessionRestarts.inc();
      restarted = true;
      phase = { name: 'restarting', waiting: true };
      logger.warn({ err, delayMs, failures }, 'the Kafka session failed; restarting it after a backoff');
      try {
        await sleep(delayMs, stopRequested.signal);
      } catch (e) {
        if (e instanceof AbortedError) return undefined;
        throw e;
      }
      phase = { name: 'restarting', waiting: false };
      context.alive();
      try {
        const started = await openSession(stopRequested.signal);
        logger.info({ failures }, 'Kafka session restarted');
        return started;
      } catch (e) {
        err = e;
      }
    }
  };

  /** Replaces each session that fails with a new one, until a stop or a platform failure. */
  const supervise = async (first: Session): Promise<void> => {
    let current = first;
    for (;;) {
      const failure = await current.ended;
      if (failure === undefined || stopRequested.signal.aborted) {
        // Stopping, a failure no restart would end is still the outcome, and its exit code.
        if (failure !== undefined && isPlatformFailure(failure)) throw failure;
        return;
      }
      const joinedAt = current.joinedAt();
      if (joinedAt !== undefined && now() - joinedAt >= SESSION_HEALTHY_AFTER_MS) failures = 0;
      const next = await restart(failure);
      if (next === undefined) return;
      current = next;
      if (!stopRequested.signal.aborted) phase = { name: 'running' };
    }
  };

  return {
    done: done.promise,
    async start(signal) {
      // Each attempt of a start-up that waits out an outage is a sign of life: /healthz stays true
      // through the attempts and their backoff, as through a running session's restarts.
      context.alive();
      await openSession(signal);
      phase = { name: 'running' };
      context.alive();
      logger.info({ requestsTopic: config.requestsTopic, groupId: config.groupId }, 'verifier started');
      supervising = supervise(session as Session).then(
        () => done.resolve(),
        (err: unknown) => {
          phase = { name: 'failed' };
          done.reject(err);
        },
      );
    },
    async stop() {
      phase = { name: 'stopping' };
      stopRequested.abort(new AbortedError('verifier stopping'));
      await session?.stop();
      await supervising;
    },
    ready() {
      if (phase.name === 'stopping' || phase.name === 'failed') return { ready: false, reason: 'stopping' };
      if (phase.name === 'restarting') return { ready: false, reason: 'kafka session restarting' };
      if (session?.joined()) return { ready: true };
      // A new session after a failure, until it first joins; or kafkajs restarting a crashed consumer.
      const restarting = (restarted && session?.joinedAt() === undefined) || session?.rejoining();
      return { ready: false, reason: restarting ? 'kafka session restarting' : 'joining group' };
    },
    healthy() {
      if (phase.name === 'restarting' && phase.waiting) return true;
      return now() - lastSignOfLife < LIVENESS_MS;
    },
  };
}
