import type { CursorTracker } from './cursor.ts';

/**
 * Longest time a caught-up connector goes without a transaction: it then commits its unchanged
 * cursor. A transactional id without transactions for `transactional.id.expiration.ms` (7 days by
 * default) is forgotten by the broker, and the next AddPartitionsToTxn gets
 * INVALID_PRODUCER_ID_MAPPING: the producer then takes a new producer id and runs the transaction
 * again (producer.ts), which this commit spares.
 */
export const IDLE_COMMIT_MS = 60 * 60 * 1000;

/** The part of CursorTracker that says where the feed is read from next. */
type Position = Pick<CursorTracker, 'nextRequest' | 'highWaterMark'>;

/**
 * What a session's last commit covered and when it was: a commit is worth making when the open
 * transaction holds rows, when the position in the feed moved since, or when the session has been
 * idle for IDLE_COMMIT_MS.
 */
export class CommitLedger {
  readonly #tracker: Position;
  readonly #now: () => number;
  #committedPosition: string;
  #committedAt: number;

  /** The session's InitProducerId counts as a transaction: the ledger starts as just committed. */
  constructor(tracker: Position, now: () => number) {
    this.#tracker = tracker;
    this.#now = now;
    this.#committedPosition = this.#position();
    this.#committedAt = now();
  }

  /** Where the feed would be read from next, as it stands in the cursor. */
  #position(): string {
    return JSON.stringify([this.#tracker.nextRequest(), this.#tracker.highWaterMark]);
  }

  /** True when a commit would record something: rows held, or a position not yet committed. */
  hasNews(open: { rows: number }): boolean {
    return open.rows > 0 || this.#position() !== this.#committedPosition;
  }

  /** True once IDLE_COMMIT_MS have passed since the last commit. */
  isIdle(): boolean {
    return this.#now() - this.#committedAt >= IDLE_COMMIT_MS;
  }

  /** Records a commit of the position as it stands now. */
  committed(): void {
    this.#committedPosition = this.#position();
    this.#committedAt = this.#now();
  }
}

const swallow = () => {};

/** The session's commits, run one at a time; the loop reads on while the last one runs. */
export class InflightCommit {
  #running: Promise<void> | undefined;

  /**
   * Waits for the commit still running (rejecting with its failure), then starts `commit`
   * without waiting for it.
   */
  async start(commit: () => Promise<void>): Promise<void> {
    if (this.#running) await this.#running;
    const running = commit();
    running.catch(swallow); // observed by the next start(), settle() or finish()
    this.#running = running;
  }

  /** Waits for the commit still running, rejecting with its failure. */
  async settle(): Promise<void> {
    if (this.#running) await this.#running;
    this.#running = undefined;
  }

  /** Waits for the commit still running; resolves with its failure, if any. */
  async finish(): Promise<unknown> {
    let failure: unknown;
    if (this.#running) await this.#running.catch((err: unknown) => (failure = err));
    return failure;
  }
}
