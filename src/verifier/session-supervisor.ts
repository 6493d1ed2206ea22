import { AbortedError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { sleep } from '../retry.ts';
import type { VerifierMetrics } from './metrics.ts';
import { isPlatformFailure } from './platform-failure.ts';
import type { Session } from './session.ts';
import type { RestartBackoff, VerifierLifecycle } from './verifier-state.ts';

export interface SessionSupervisorDeps {
  /** A new session, not started yet. */
  newSession(): Session;
  lifecycle: VerifierLifecycle;
  backoff: RestartBackoff;
  logger: Logger;
  metrics: Pick<VerifierMetrics, 'sessionRestarts'>;
}

/**
 * Opens the verifier's sessions and replaces each one that fails by a new one after a backoff,
 * until a stop or a platform failure (isPlatformFailure): `done` resolves after stop() and rejects
 * with the platform failure.
 */
export class SessionSupervisor {
  readonly #deps: SessionSupervisorDeps;
  readonly #stopRequested = new AbortController();
  readonly #done = Promise.withResolvers<void>();
  /** The session running, or being started. */
  #current: Session | undefined;
  #supervising: Promise<void> | undefined;

  constructor(deps: SessionSupervisorDeps) {
    this.#deps = deps;
    this.#done.promise.catch(() => {});
  }

  get done(): Promise<void> {
    return this.#done.promise;
  }

  get current(): Session | undefined {
    return this.#current;
  }

  /** Creates a session, the current one from now on, and starts it. */
  async open(signal?: AbortSignal): Promise<Session> {
    const next = this.#deps.newSession();
    this.#current = next;
    await next.start(signal);
    return next;
  }

  /** Watches `first` and the sessions that replace it, settling `done` when they end. */
  supervise(first: Session): void {
    this.#supervising = this.#superviseFrom(first).then(
      () => this.#done.resolve(),
      (err: unknown) => {
        this.#deps.lifecycle.failed();
        this.#done.reject(err);
      },
    );
  }

  /** Ends a restart's backoff at once and stops the current session. */
  async stop(): Promise<void> {
    this.#deps.lifecycle.stopping();
    this.#stopRequested.abort(new AbortedError('verifier stopping'));
    await this.#current?.stop();
    await this.#supervising;
  }

  get #stopping(): boolean {
    return this.#stopRequested.signal.aborted;
  }

  async #superviseFrom(first: Session): Promise<void> {
    let current = first;
    for (;;) {
      const failure = await current.ended;
      if (failure === undefined || this.#stopping) {
        // Stopping, a failure no restart would end is still the outcome, and its exit code.
        if (failure !== undefined && isPlatformFailure(failure)) throw failure;
        return;
      }
      this.#deps.backoff.sessionEnded(current.lifecycle.joinedAt);
      const next = await this.#restart(failure);
      if (next === undefined) return;
      current = next;
      this.#deps.lifecycle.restarted();
    }
  }

  /** The restarts after `failure`, until a session starts: undefined when a stop ended them. */
  async #restart(failure: unknown): Promise<Session | undefined> {
    const { lifecycle, backoff, logger, metrics } = this.#deps;
    let err = failure;
    for (;;) {
      if (this.#stopping) return undefined;
      if (isPlatformFailure(err)) throw err;
      const delayMs = backoff.nextDelay();
      metrics.sessionRestarts.inc();
      lifecycle.sessionFailed();
      logger.warn(
        { err, delayMs, failures: backoff.failures },
        'the Kafka session failed; restarting it after a backoff',
      );
      try {
        await sleep(delayMs, this.#stopRequested.signal);
      } catch (e) {
        if (e instanceof AbortedError) return undefined;
        throw e;
      }
      lifecycle.backoffOver();
      lifecycle.alive();
      try {
        const started = await this.open(this.#stopRequested.signal);
        logger.info({ failures: backoff.failures }, 'Kafka session restarted');
        return started;
      } catch (e) {
        err = e;
      }
    }
  }
}
