import { unlessAborted } from './retry.ts';

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
}

/**
 * Runs a component's start-up, which `signal` ends within the step under way: `run` awaits each
 * step through `step` (or passes the signal on) and registers what it creates. On a failure or an
 * abort, what it created (clients, the ops server, a worker thread) is released, the latest first,
 * before the promise rejects: none of it outlives a start-up that did not finish.
 */
export async function startUp<T>(
  signal: AbortSignal | undefined,
  run: (steps: StartUpSteps) => Promise<T>,
): Promise<T> {
  const releases: (() => Promise<unknown>)[] = [];
  try {
    return await run({
      signal,
      step: (what, promise) => unlessAborted(promise, signal, what),
      created(resource, release) {
        releases.push(() => release(resource));
        return resource;
      },
    });
  } catch (err) {
    // The failure, or the abort, is the news: a release that fails as well is not.
    for (const release of releases.reverse()) await release().catch(() => {});
    throw err;
  }
}
