import { isRetriable } from './errors.ts';
import { OUTAGE_RETRY_POLICY, type RetryPolicy, retry, unlessAborted } from './retry.ts';
import { isPlatformFailure } from './verifier/platform-failure.ts';

export interface StartOptions {
  /**
   * Ends start-up at once with AbortedError (a stop request, e.g. SIGTERM), what it had created
   * released first.
   */
  signal?: AbortSignal;
}

export interface StartUpSteps {
  /** The stop signal, for a step that takes one (and then needs no `step`). */
  signal: AbortSignal | undefined;
  /**
   * `promise`'s value, or AbortedError (`what` aborted) as soon as the signal aborts. The step runs
   * on, unobserved, until the release of what it belongs to (an admin client's calls) ends it.
   */
  step<T>(what: string, promise: Promise<T>): Promise<T>;
  /** Returns `resource`, which `release` releases should start-up fail or be aborted from here on. */
  created<T>(resource: T, release: (resource: T) => Promise<unknown>): T;
  /**
   * `attempt`'s value, attempted again after each failure that is an outage of `dependency`
   * (isStartUpOutage) for as long as the outage lasts, with OUTAGE_RETRY_POLICY's backoff, each
   * retry logged; any other failure rejects at once. The signal ends it within an attempt or a wait.
   */
  outlasting<T>(what: string, dependency: StartUpDependency, attempt: () => Promise<T>): Promise<T>;
  /** The readiness of a component still starting: the outage it waits out, if any. */
  readiness(): { ready: false; reason: string };
}

/** What start-up waits for while it is away. */
export type StartUpDependency = 'Kafka' | 'the schema registry';

export interface StartUpOptions {
  /** Where each retry of a step that met an outage is logged (warn). */
  logger?: { warn(details: Record<string, unknown>, msg: string): void };
  /** For tests: the backoff between the attempts of a step that met an outage. */
  outagePolicy?: RetryPolicy;
}

/** The message of each retry of a start-up step that met an outage. */
export const START_UP_RETRY_MESSAGE = 'start-up waits out an outage; trying the step again';

/**
 * Whether a start-up step's failure is an outage to wait out: retriable, and not the platform's
 * doing (refused credentials or authorizations, a configuration error, a topic config mismatch:
 * isPlatformFailure), which fails the start-up at once.
 */
export function isStartUpOutage(err: unknown): boolean {
  return isRetriable(err) && !isPlatformFailure(err);
}

/**
 * Runs a component's start-up, which `signal` ends within the step under way: `run` awaits each
 * step through `step` (or passes the signal on) and registers what it creates. On a failure or an
 * abort, what it created (clients, the ops server, a worker thread) is released, the latest first,
 * before the promise rejects: none of it outlives a start-up that did not finish. A step that meets
 * an outage of the broker or the registry (`outlasting`) waits it out, however long it lasts.
 */
export async function startUp<T>(
  signal: AbortSignal | undefined,
  run: (steps: StartUpSteps) => Promise<T>,
  { logger, outagePolicy = OUTAGE_RETRY_POLICY }: StartUpOptions = {},
): Promise<T> {
  const releases: (() => Promise<unknown>)[] = [];
  let waitingFor: StartUpDependency | undefined;
  try {
    return await run({
      signal,
      step: (what, promise) => unlessAborted(promise, signal, what),
      created(resource, release) {
        releases.push(() => release(resource));
        return resource;
      },
      async outlasting(what, dependency, attempt) {
        try {
          return await retry(() => unlessAborted(attempt(), signal, what), {
            ...outagePolicy,
            ...(signal && { signal }),
            shouldRetry: isStartUpOutage,
            onRetry: ({ attempt: retries, delayMs, error }) => {
              waitingFor = dependency;
              logger?.warn(
                { err: error, step: what, waitingFor: dependency, retries, delayMs },
                START_UP_RETRY_MESSAGE,
              );
            },
          });
        } finally {
          waitingFor = undefined;
        }
      },
      readiness: () => ({
        ready: false,
        reason: waitingFor === undefined ? 'starting' : `starting: waiting for ${waitingFor}`,
      }),
    });
  } catch (err) {
    // The failure, or the abort, is the news: a release that fails as well is not.
    for (const release of releases.reverse()) await release().catch(() => {});
    throw err;
  }
}
