import type { KafkaClient } from '../kafka/index.ts';
import type { Logger } from '../logger.ts';
import { OUTAGE_RETRY_POLICY, type RetryPolicy } from '../retry.ts';
import type { HandlerDeps } from './handle.ts';
import type { HeldReplyLimits } from './held-replies.ts';
import { RefusedReplyTopics } from './refused-topics.ts';
import { createSession, type SessionContext } from './session.ts';
import { SessionSupervisor } from './session-supervisor.ts';
import { Slots } from './slots.ts';
import { RestartBackoff, VerifierLifecycle } from './verifier-state.ts';

export { DRAIN_TIMEOUT_MS } from './session.ts';
export { LIVENESS_MS } from './verifier-state.ts';

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
 * Consumes requests, verifies many at once, and commits replies together with the consumed offsets
 * in one transaction (a session: createSession). A session that fails for a reason no operator
 * needs to fix (a broker or registry outage, a consumer kafkajs gave up on, a transaction the broker
 * could not finish) is closed and replaced by a new one after a backoff (SESSION_RESTART_POLICY),
 * however long the outage lasts: what the failed session had in hand was not committed, and the new
 * one reads it again from the committed offsets, so each request still gets exactly one reply. Only
 * a platform failure (isPlatformFailure) ends the verifier.
 *
 * Where the verifier stands is one VerifierLifecycle (verifier-state.ts), where each session stands
 * one SessionLifecycle (session-state.ts); SessionSupervisor replaces the sessions that fail.
 */
export function createVerifier(deps: VerifierDeps): Verifier {
  const { config, logger } = deps;
  const now = deps.now ?? (() => performance.now());
  const lifecycle = new VerifierLifecycle(now);
  const backoff = new RestartBackoff(deps.restartPolicy ?? SESSION_RESTART_POLICY, now);
  const refusedTopics = deps.refusedReplyTopics ?? new RefusedReplyTopics(REFUSED_REPLY_TOPIC_MS);
  const context: SessionContext = {
    deps,
    slots: new Slots(config.concurrency),
    handlerDeps: { ...deps, refusedReplyTopics: refusedTopics },
    alive: () => lifecycle.alive(),
    progressed: () => backoff.progressed(),
  };
  const sessions = new SessionSupervisor({
    newSession: () => createSession(context),
    lifecycle,
    backoff,
    logger,
    metrics: deps.metrics,
  });

  return {
    done: sessions.done,
    async start(signal) {
      // Each attempt of a start-up that waits out an outage is a sign of life: /healthz stays true
      // through the attempts and their backoff, as through a running session's restarts.
      lifecycle.alive();
      const first = await sessions.open(signal);
      lifecycle.started();
      lifecycle.alive();
      if (lifecycle.phase.name === 'running') {
        logger.info({ requestsTopic: config.requestsTopic, groupId: config.groupId }, 'verifier started');
      }
      // Also after a stop that came during start-up: `done` settles once this session has ended.
      sessions.supervise(first);
    },
    stop: () => sessions.stop(),
    ready: () => lifecycle.ready(sessions.current?.lifecycle),
    healthy: () => lifecycle.healthy(),
  };
}
