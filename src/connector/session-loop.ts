import { caughtUp as caughtUpAt, ExportCursorCheck, pageIdentity } from '../api/export-cursor.ts';
import { sleep } from '../retry.ts';
import { CommitLedger, type InflightCommit } from './commit-ledger.ts';
import type { Batch, ConnectorDeps, PublishSession } from './connector.ts';
import { CursorTracker } from './cursor.ts';
import type { ConnectorMetrics } from './metrics.ts';
import { OpenTransaction } from './open-transaction.ts';
import { PagePrefetch } from './page-prefetch.ts';
import { KIND_REJECTED, type PreparedPage } from './prepare.ts';
import type { EventType, RowErrorCode } from './rows.ts';

/** The fingerprint of the page's first or last row (an event's, or a DLQ row's). */
function fingerprintAt(page: PreparedPage, last: boolean): string | undefined {
  if (page.kinds[last ? page.kinds.length - 1 : 0] === KIND_REJECTED) {
    return (last ? page.rejected.at(-1) : page.rejected[0])?.fingerprint;
  }
  return last ? page.rowFingerprints.at(-1) : page.rowFingerprints[0];
}

/** The page as ExportCursorCheck compares it: its row count, first and last row. */
function identityOf(page: PreparedPage): string | undefined {
  return pageIdentity(page.kinds.length, fingerprintAt(page, false), fingerprintAt(page, true));
}

/** Counts a committed transaction's rows, per transaction: a labelled inc() hashes its labels each time. */
function countCommitted(metrics: ConnectorMetrics, batch: Batch): void {
  metrics.transactionRows.observe(batch.events.length + batch.rejected.length);
  const published = new Map<EventType, number>();
  let newest = Number.NEGATIVE_INFINITY;
  for (const { type, updatedAt } of batch.events) {
    published.set(type, (published.get(type) ?? 0) + 1);
    if (updatedAt > newest) newest = updatedAt;
  }
  for (const [type, n] of published) metrics.published.inc({ type }, n);
  if (batch.events.length > 0) metrics.setNewestPublished(newest);
  const rejected = new Map<RowErrorCode, number>();
  for (const r of batch.rejected) rejected.set(r.code, (rejected.get(r.code) ?? 0) + 1);
  for (const [code, n] of rejected) metrics.rejected.inc({ code }, n);
}

export interface SessionLoopDeps {
  connector: Omit<ConnectorDeps, 'openSession' | 'now'>;
  session: PublishSession;
  /** The session's commits; the caller waits for the last one when the loop ends. */
  commits: InflightCommit;
  /** Called after each commit, and when caught up with nothing left to commit. */
  progressed: () => void;
  signal: AbortSignal;
  now: () => number;
}

/**
 * One producer session's work: from the cursor it read, page → map → commit until stopped or
 * failed. When `progressed` is called the session works end to end, upstream to Kafka.
 */
export class SessionLoop {
  readonly #deps: SessionLoopDeps;
  readonly #tracker: CursorTracker;
  readonly #open: OpenTransaction;
  readonly #ledger: CommitLedger;
  readonly #prefetch: PagePrefetch;
  readonly #cursorCheck: ExportCursorCheck;

  /** Takes up the session's cursor and asks for the first page. */
  constructor(deps: SessionLoopDeps) {
    this.#deps = deps;
    const { connector, session, signal, now } = deps;
    const tracker = session.cursor
      ? new CursorTracker(session.cursor)
      : CursorTracker.initial(connector.name, connector.exportStart);
    this.#tracker = tracker;
    connector.logger.info(
      { resumeFrom: tracker.nextRequest(), highWaterMark: tracker.highWaterMark },
      'connector session started',
    );
    this.#open = new OpenTransaction(connector, now);
    this.#ledger = new CommitLedger(tracker, now);
    this.#prefetch = new PagePrefetch({
      pages: connector.pages,
      tracker,
      signal,
      logger: connector.logger,
      now,
    });
    this.#cursorCheck = new ExportCursorCheck(connector.cursorParam);
  }

  async run(): Promise<void> {
    const { metrics } = this.#deps.connector;
    while (!this.#deps.signal.aborted) {
      const page = await this.#nextPage();
      const vouched = await this.#vouchFor(page);
      metrics.setState('running');
      metrics.pages.inc();
      const caughtUp = this.#take(page, vouched);
      if (this.#commitDue(caughtUp)) await this.#commitOpen();
      if (caughtUp) await this.#pollWhenCaughtUp();
      this.#prefetch.fetchNext();
    }
  }

  /**
   * The page asked for. While it is slow (a 429's Retry-After, 5xx backoff), the rows read so far are
   * committed when their transaction is CONNECTOR_TX_MAX_MS old, not when the page comes (unless the
   * transaction holds a page that waits for this one to be vouched for).
   */
  async #nextPage(): Promise<PreparedPage> {
    for (;;) {
      const page = await this.#prefetch.receive(this.#open.commitDeadline());
      if (page !== undefined) return page;
      await this.#commitOpen();
    }
  }

  /** Whether ExportCursorCheck vouches for the page; throws when it shows the cursor was not read. */
  async #vouchFor(page: PreparedPage): Promise<boolean> {
    try {
      return this.#cursorCheck.check(this.#prefetch.requested, page.nextCursor, identityOf(page));
    } catch (err) {
      // None of this page's rows is admitted. Pages read without a cursor before it are sound:
      // committed, with the cursor the last one named, from which a restart with the parameter's
      // right name reads on. A page read with a cursor since the last commit may be the first
      // page served again, unnoticed under a fresh cursor when the page before it was another
      // (after a restart on a stored cursor, or a resume below the mark): the open transaction
      // is dropped instead.
      if (this.#ledger.hasNews(this.#open) && !this.#open.holdsCursorPage) await this.#commitOpen();
      throw err;
    }
  }

  /**
   * Admits the page's new rows into the open transaction and moves the cursor past the page.
   * Returns whether the page says the feed is caught up.
   */
  #take(page: PreparedPage, vouched: boolean): boolean {
    const requested = this.#prefetch.requested;
    this.#deps.connector.metrics.deduplicated.inc(this.#open.admit(page, this.#tracker));
    if (requested.cursor !== undefined) this.#open.heldCursorPage(vouched);
    this.#tracker.pageDone(page.nextCursor);
    return caughtUpAt(requested, page.nextCursor, page.kinds.length);
  }

  /** The open transaction is due, and its commit would record something (or the session idles). */
  #commitDue(caughtUp: boolean): boolean {
    return this.#open.isDue(caughtUp) && (this.#ledger.hasNews(this.#open) || this.#ledger.isIdle());
  }

  /** Commits the open transaction; one at a time, the next page is fetched meanwhile. */
  async #commitOpen(): Promise<void> {
    const { commits, progressed, now } = this.#deps;
    await commits.start(() => this.#publish(this.#open.take(this.#tracker.snapshot(now()))).then(progressed));
    this.#ledger.committed();
  }

  /** Commits `batch` in the session's transaction, then counts it. */
  async #publish(batch: Batch): Promise<void> {
    const { session, connector, now } = this.#deps;
    const started = performance.now();
    await session.commit(batch);
    connector.metrics.commitSeconds.observe((performance.now() - started) / 1000);
    countCommitted(connector.metrics, batch);
    connector.metrics.setCursorCommitted(now());
  }

  /** Caught up: once the last commit is through, the session has progressed; then the poll interval. */
  async #pollWhenCaughtUp(): Promise<void> {
    const { commits, progressed, connector, signal } = this.#deps;
    await commits.settle();
    progressed();
    connector.metrics.setState('caught_up');
    await sleep(connector.pollIntervalMs, signal);
  }
}
