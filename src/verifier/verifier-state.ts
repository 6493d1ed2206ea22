import { backoffDelay, type RetryPolicy } from '../retry.ts';
import type { SessionView } from './session-state.ts';

/**
 * How long the consumer may go without a sign of life (a fetch started, a heartbeat sent, a restart
 * waited for or begun) before /healthz reports it hung: kafkajs fetches at least every
 * maxWaitMs (100 ms) and heartbeats every second, and a session start that connects through
 * kafkajs's retries takes well under a minute.
 */
export const LIVENESS_MS = 120_000;

/**
 * A session joined this long without failing counts as healthy: the next failure starts the
 * backoff again from its shortest wait, as a commit does.
 */
export const SESSION_HEALTHY_AFTER_MS = 60_000;

/**
 * Where the verifier stands, for readiness and liveness:
 *
 * - `starting`: start() opens the first session;
 * - `running`: a session runs; `afterRestart` once it replaced a failed one;
 * - `restarting`: a session failed: the verifier waits out the backoff (`waiting`), then opens the
 *   next session;
 * - `stopping`: stop() has begun;
 * - `failed`: a platform failure ended it.
 *
 * The moves:
 *
 *   starting ──session started──▶ running ──session failed──▶ restarting (waiting)
 *   restarting (waiting) ──backoff over──▶ restarting ──session started──▶ running (afterRestart)
 *   restarting ──session failed to start──▶ restarting (waiting)
 *   any phase ──stop()──▶ stopping;   any phase ──platform failure──▶ failed
 */
export type VerifierPhase =
  | { name: 'starting' }
  | { name: 'running'; afterRestart: boolean }
  | { name: 'restarting'; waiting: boolean }
  | { name: 'stopping' }
  | { name: 'failed' };

export interface Readiness {
  ready: boolean;
  reason?: string;
}

/** The verifier's phase and its last sign of life, with the moves between phases as methods. */
export class VerifierLifecycle {
  #phase: VerifierPhase = { name: 'starting' };
  #lastSignOfLife: number;
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
    this.#lastSignOfLife = now();
  }

  get phase(): Readonly<VerifierPhase> {
    return this.#phase;
  }

  /** The consumer, or a start or restart of its session, showed a sign of life. */
  alive(): void {
    this.#lastSignOfLife = this.#now();
  }

  /** start() has opened a session: it runs, unless a stop came meanwhile. */
  started(): void {
    if (this.#ended()) return;
    this.#phase = { name: 'running', afterRestart: false };
  }

  /** A session failed (or the next one failed to start): the backoff before the next begins. */
  sessionFailed(): void {
    if (this.#ended()) return;
    this.#phase = { name: 'restarting', waiting: true };
  }

  /** The backoff is over: the next session opens. */
  backoffOver(): void {
    if (this.#ended()) return;
    this.#phase = { name: 'restarting', waiting: false };
  }

  /** The next session has started, unless a stop came meanwhile. */
  restarted(): void {
    if (this.#phase.name !== 'restarting') return;
    this.#phase = { name: 'running', afterRestart: true };
  }

  stopping(): void {
    this.#phase = { name: 'stopping' };
  }

  failed(): void {
    this.#phase = { name: 'failed' };
  }

  /** Readiness, given the current session: ready once it has joined its group. */
  ready(session: SessionView | undefined): Readiness {
    const phase = this.#phase;
    if (phase.name === 'stopping' || phase.name === 'failed') return { ready: false, reason: 'stopping' };
    if (phase.name === 'restarting') return { ready: false, reason: 'kafka session restarting' };
    if (session?.joined) return { ready: true };
    // A new session after a failure, until it first joins; or kafkajs restarting a crashed consumer.
    const afterRestart = phase.name === 'running' && phase.afterRestart;
    const restarting = (afterRestart && session?.joinedAt === undefined) || session?.rejoining;
    return { ready: false, reason: restarting ? 'kafka session restarting' : 'joining group' };
  }

  /**
   * Liveness: a sign of life within LIVENESS_MS, or waiting out a restart's backoff (however long:
   * riding out an outage is not a hung consumer).
   */
  healthy(): boolean {
    if (this.#phase.name === 'restarting' && this.#phase.waiting) return true;
    return this.#now() - this.#lastSignOfLife < LIVENESS_MS;
  }

  #ended(): boolean {
    return this.#phase.name === 'stopping' || this.#phase.name === 'failed';
  }
}

/**
 * The backoff between session restarts: it grows with each session that fails, and starts again
 * from its shortest wait once a session commits or stays joined for SESSION_HEALTHY_AFTER_MS.
 */
export class RestartBackoff {
  readonly #policy: Readonly<RetryPolicy>;
  readonly #now: () => number;
  /** Failed sessions since one last committed or stayed joined for SESSION_HEALTHY_AFTER_MS. */
  #failures = 0;

  constructor(policy: Readonly<RetryPolicy>, now: () => number) {
    this.#policy = policy;
    this.#now = now;
  }

  get failures(): number {
    return this.#failures;
  }

  /** A transaction committed. */
  progressed(): void {
    this.#failures = 0;
  }

  /** A session ended with a failure, after first joining its group at `joinedAt` (if it did). */
  sessionEnded(joinedAt: number | undefined): void {
    if (joinedAt !== undefined && this.#now() - joinedAt >= SESSION_HEALTHY_AFTER_MS) this.#failures = 0;
  }

  /** One more session failed (or failed to start): how long to wait before the next. */
  nextDelay(): number {
    this.#failures++;
    return backoffDelay(this.#failures, this.#policy);
  }
}
