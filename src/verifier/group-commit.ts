/**
 * Group commit with a least interval: `request()` says that something is ready to commit; commits
 * run one at a time, start at least `intervalMs` apart, and whatever became ready while one was
 * running or waiting goes into the next. An idle committer commits at once.
 *
 * `pause()` holds commits back (while the consumer rejoins its group) until `resume()`.
 *
 * After a failed commit nothing more is committed: what it carried is lost with its transaction,
 * and a later commit's consumer offsets would cover those requests, which would then never be
 * answered. `onError` reports the failure; the owner stops, and the restart reads from the offsets
 * committed last.
 */
export class GroupCommit {
  readonly #commit: () => Promise<void>;
  readonly #intervalMs: number;
  readonly #onError: (err: unknown) => void;
  readonly #now: () => number;
  #running: Promise<void> | undefined;
  #waiting: NodeJS.Timeout | undefined;
  #pending = false;
  #flushing = false;
  #lastStart = Number.NEGATIVE_INFINITY;
  #failed = false;
  #paused = false;

  constructor(options: {
    commit: () => Promise<void>;
    intervalMs: number;
    onError: (err: unknown) => void;
    now?: () => number;
  }) {
    this.#commit = options.commit;
    this.#intervalMs = options.intervalMs;
    this.#onError = options.onError;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Something is ready: commit it now, or with the next commit. */
  request(): void {
    this.#pending = true;
    if (this.#failed || this.#paused || this.#running || this.#waiting) return;
    const wait = this.#flushing ? 0 : this.#lastStart + this.#intervalMs - this.#now();
    if (wait > 0) {
      this.#waiting = setTimeout(() => {
        this.#waiting = undefined;
        this.#start();
      }, wait);
      return;
    }
    this.#start();
  }

  /**
   * From now on commits without waiting out the interval; resolves when nothing is left to commit
   * (or, paused or after a failed commit, when the one running has ended).
   */
  async flush(): Promise<void> {
    this.#flushing = true;
    clearTimeout(this.#waiting);
    this.#waiting = undefined;
    this.#pending = true;
    while (this.#running || (this.#pending && !this.#failed && !this.#paused)) {
      if (!this.#running) this.#start();
      await this.#running;
    }
  }

  /** Starts no commit until `resume()`; resolves once the commit running, if any, has ended. */
  async pause(): Promise<void> {
    this.#paused = true;
    clearTimeout(this.#waiting);
    this.#waiting = undefined;
    await this.#running;
  }

  /** Commits again, at once what became ready while paused. */
  resume(): void {
    this.#paused = false;
    if (this.#pending) this.request();
  }

  #start(): void {
    this.#pending = false;
    this.#lastStart = this.#now();
    this.#running = this.#commit()
      .catch((err: unknown) => {
        this.#failed = true;
        this.#onError(err);
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#pending) this.request();
      });
  }
}
