import { ErrorCodes, findError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { settledWithin } from '../retry.ts';
import type { CursorTracker, ExportRequest } from './cursor.ts';
import type { PageSource } from './pages.ts';
import type { PreparedPage } from './prepare.ts';

const swallow = () => {};

/**
 * A page asked for with a cursor that the upstream refused as a client error (a 4xx but 401, 403 and
 * 429, which stop or back off as anywhere else): a cursor it no longer honours (expired while the
 * connector was down, issued by another base URL or tenant). It would be refused again at every
 * restart.
 */
export function cursorRefused(err: unknown, request: ExportRequest): boolean {
  if (request.cursor === undefined) return false;
  return (
    findError(err, ErrorCodes.UPSTREAM_CLIENT_ERROR) !== undefined ||
    findError(err, ErrorCodes.UPSTREAM_NOT_FOUND) !== undefined
  );
}

export interface PagePrefetchDeps {
  pages: PageSource;
  /** Where the next page is read from; a refused cursor is dropped from it. */
  tracker: Pick<CursorTracker, 'nextRequest' | 'highWaterMark' | 'dropCursor'>;
  signal: AbortSignal;
  logger: Logger;
  now: () => number;
}

/**
 * The next page of the feed, asked for as soon as the cursor names it: it is fetched while the
 * session commits what it read before.
 */
export class PagePrefetch {
  readonly #deps: PagePrefetchDeps;
  #requested!: ExportRequest;
  #page!: Promise<PreparedPage>;
  /** The mark when a refused cursor was last dropped: a second refusal there is not ridden out. */
  #droppedAt: number | null | undefined;

  constructor(deps: PagePrefetchDeps) {
    this.#deps = deps;
    this.fetchNext();
  }

  /** What the page being fetched answers. */
  get requested(): ExportRequest {
    return this.#requested;
  }

  /** Asks for the page the cursor names now. */
  fetchNext(): void {
    this.#requested = this.#deps.tracker.nextRequest();
    this.#page = this.#deps.pages.next(this.#requested, this.#deps.signal);
    this.#page.catch(swallow); // awaited later; this only keeps an early rejection from being "unhandled"
  }

  /**
   * The page asked for; undefined when `deadline` (on the `now` clock) passes first. A refused
   * cursor is dropped and the page asked for again from the high-water mark, once per mark.
   */
  async receive(deadline?: number): Promise<PreparedPage | undefined> {
    for (;;) {
      try {
        if (deadline === undefined) return await this.#page;
        return await settledWithin(this.#page, deadline - this.#deps.now());
      } catch (err) {
        if (!this.#dropRefusedCursor(err)) throw err;
      }
    }
  }

  /**
   * Reads again from the mark, once per mark: a refusal of the cursors that follow without the mark
   * moving (every cursor refused) stops the connector with the upstream's error. False when `err`
   * is not ridden out.
   */
  #dropRefusedCursor(err: unknown): boolean {
    const { tracker, logger } = this.#deps;
    if (!cursorRefused(err, this.#requested) || this.#droppedAt === tracker.highWaterMark) return false;
    this.#droppedAt = tracker.highWaterMark;
    tracker.dropCursor();
    logger.warn(
      { err, resumeFrom: tracker.nextRequest() },
      'the upstream refused the export cursor; reading on from the high-water mark instead',
    );
    this.fetchNext();
    return true;
  }
}
