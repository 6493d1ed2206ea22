import { caughtUp as caughtUpAt, ExportCursorCheck, pageIdentity } from '../api/export-cursor.ts';
import { AbortedError, ErrorCodes, findError, isRetriable } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { backoffDelay, defaultRetryPolicy, settledWithin, sleep } from '../retry.ts';
import { type CursorRecord, CursorTracker, type ExportRequest } from './cursor.ts';
import type { ConnectorMetrics } from './metrics.ts';
import type { PageRetry, PageSource } from './pages.ts';
import {
  eventValue,
  KIND_REJECTED,
  kindTypes,
  type PreparedPage,
  type PreparedRejection,
} from './prepare.ts';
import type { EventType, RowErrorCode } from './rows.ts';

export type { ExportFeed, ExportPage } from './pages.ts';

/** An event ready for Kafka: its key, its Avro value (wire format) and what its headers carry. */
export interface PreparedEvent {
  type: EventType;
  key: string;
  value: Buffer;
  eventId: string;
  alertId: string;
  updatedAt: number;
}

/** What one Kafka transaction carries: events, DLQ records and the cursor that covers them. */
export interface Batch {
  events: PreparedEvent[];
  rejected: PreparedRejection[];
  cursor: CursorRecord;
}

/** A fenced, initialised transactional publisher and the cursor it read back from Kafka. */
export interface PublishSession {
  cursor: CursorRecord | null;
  commit(batch: Batch): Promise<void>;
  close(): Promise<void>;
}

export interface ConnectorDeps {
  name: string;
  exportStart: 'earliest' | Date;
  /** EXPORT_CURSOR_PARAM: named when the upstream turns out not to read it. */
  cursorParam: string;
  pollIntervalMs: number;
  txMaxRows: number;
  txMaxMs: number;
  pages: PageSource;
  openSession(signal: AbortSignal): Promise<PublishSession>;
  metrics: ConnectorMetrics;
  logger: Logger;
  now?: () => number;
}

export interface Connector {
  /** Resolves when the connector stops after `stop()`; rejects on a failure it cannot ride out. */
  start(): Promise<void>;
  stop(): Promise<void>;
  ready(): { ready: boolean; reason?: string };
}

const swallow = () => {};

/**
 * Longest time a caught-up connector goes without a transaction: it then commits its unchanged
 * cursor. A transactional id without transactions for `transactional.id.expiration.ms` (7 days by
 * default) is forgotten by the broker, and the next AddPartitionsToTxn gets
 * INVALID_PRODUCER_ID_MAPPING: the producer then takes a new producer id and runs the transaction
 * again (producer.ts), which this commit spares.
 */
const IDLE_COMMIT_MS = 60 * 60 * 1000;

/** What the connector does on each retry of an export request: count it, show the state, log it. */
export function retryReporter(metrics: ConnectorMetrics, logger: Logger): (retry: PageRetry) => void {
  return ({ code, delayMs }) => {
    if (code === 'UPSTREAM_RATE_LIMITED') metrics.throttled.inc();
    metrics.upstreamRetries.inc({ code });
    metrics.backoffSeconds.inc(delayMs / 1000);
    metrics.setState('backing_off');
    logger.warn({ code, delayMs }, 'export request failed, backing off');
  };
}

/**
 * A page asked for with a cursor that the upstream refused as a client error (a 4xx but 401, 403 and
 * 429, which stop or back off as anywhere else): a cursor it no longer honours (expired while the
 * connector was down, issued by another base URL or tenant). It would be refused again at every
 * restart.
 */
function cursorRefused(err: unknown, request: ExportRequest): boolean {
  if (request.cursor === undefined) return false;
  return (
    findError(err, ErrorCodes.UPSTREAM_CLIENT_ERROR) !== undefined ||
    findError(err, ErrorCodes.UPSTREAM_NOT_FOUND) !== undefined
  );
}

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

/** The rows of a page the cursor has not seen yet, appended to the open transaction's lists. */
function admit(
  page: PreparedPage,
  tracker: CursorTracker,
  events: PreparedEvent[],
  rejected: PreparedRejection[],
): void {
  const { kinds, updatedAt, eventIds, rowFingerprints, alertIds, keys } = page;
  let e = 0;
  let r = 0;
  for (let i = 0; i < kinds.length; i++) {
    const kind = kinds[i] as number;
    if (kind === KIND_REJECTED) {
      const row = page.rejected[r++] as PreparedRejection;
      if (tracker.admitRejected(row.updatedAt, row.fingerprint)) rejected.push(row);
      continue;
    }
    const eventId = eventIds[e] as string;
    const alertId = alertIds[e] as string;
    const at = updatedAt[e] as number;
    if (tracker.admitEvent(at, eventId, rowFingerprints[e] as string, alertId)) {
      events.push({
        type: kindTypes[kind] as EventType,
        key: keys[e] as string,
        value: eventValue(page, e),
        eventId,
        alertId,
        updatedAt: at,
      });
    }
    e++;
  }
}

export function createConnector(deps: ConnectorDeps): Connector {
  const { metrics, logger } = deps;
  const now = deps.now ?? Date.now;
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  let sessionOpen = false;

  const fetchPage = (request: ExportRequest): Promise<PreparedPage> => {
    const page = deps.pages.next(request, controller.signal);
    page.catch(swallow); // awaited later; this only keeps an early rejection from being "unhandled"
    return page;
  };

  const commit = async (session: PublishSession, batch: Batch): Promise<void> => {
    const started = performance.now();
    await session.commit(batch);
    metrics.commitSeconds.observe((performance.now() - started) / 1000);
    metrics.transactionRows.observe(batch.events.length + batch.rejected.length);
    // Counted per transaction, not per row: a labelled inc() hashes its labels each time.
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
    metrics.setCursorCommitted(now());
  };

  /**
   * One producer session: read the cursor, then page → map → commit until stopped or failed.
   * `progressed` is called after each commit, and when caught up with nothing left to commit: the
   * session then works end to end, upstream to Kafka.
   */
  const runSession = async (progressed: () => void): Promise<void> => {
    const session = await deps.openSession(controller.signal);
    sessionOpen = true;
    let inflight: Promise<void> | undefined;
    try {
      const tracker = session.cursor
        ? new CursorTracker(session.cursor)
        : CursorTracker.initial(deps.name, deps.exportStart);
      logger.info(
        { resumeFrom: tracker.nextRequest(), highWaterMark: tracker.highWaterMark },
        'connector session started',
      );
      let dedupSeen = tracker.counters.deduplicated;
      let batch: PreparedEvent[] = [];
      let rejected: PreparedRejection[] = [];
      let batchStarted = now();
      /** Where the feed would be read from next, as it stands in the cursor: a commit is due when it moves. */
      const positionNow = () => JSON.stringify([tracker.nextRequest(), tracker.highWaterMark]);
      let lastCommittedPosition = positionNow();
      let lastCommitAt = now(); // the session's InitProducerId counts as a transaction
      let requested = tracker.nextRequest();
      let nextPage = fetchPage(requested);
      /** The mark when a refused cursor was last dropped: a second refusal there is not ridden out. */
      let droppedAt: number | null | undefined;
      const cursorCheck = new ExportCursorCheck(deps.cursorParam);
      /** True once the open transaction holds a page read with a cursor. */
      let cursorPageOpen = false;
      /**
       * True while the open transaction holds a page ExportCursorCheck could not vouch for (the first
       * answering a cursor after a restart or a page read without one): it is not committed before
       * the next page has shown that the upstream reads the cursor, or the feed is caught up. Else an
       * upstream ignoring the cursor had the feed's first page, its rows taken for late ones,
       * committed again at every restart, with a fresh cursor that reads on from a wrong place.
       */
      let unvouched = false;
      /** Commits the open transaction; one at a time, the next page is fetched meanwhile. */
      const commitOpen = async (position: string): Promise<void> => {
        if (inflight) await inflight;
        const toCommit: Batch = { events: batch, rejected, cursor: tracker.snapshot(now()) };
        inflight = commit(session, toCommit).then(progressed);
        inflight.catch(swallow);
        cursorPageOpen = false;
        unvouched = false;
        lastCommittedPosition = position;
        lastCommitAt = now();
        batch = [];
        rejected = [];
        batchStarted = now();
      };
      while (!controller.signal.aborted) {
        let page: PreparedPage | undefined;
        while (page === undefined) {
          const open = batch.length + rejected.length > 0 && !unvouched;
          try {
            page = open ? await settledWithin(nextPage, batchStarted + deps.txMaxMs - now()) : await nextPage;
          } catch (err) {
            // Read again from the mark, once per mark: a refusal of the cursors that follow without
            // the mark moving (every cursor refused) stops the connector with the upstream's error.
            if (!cursorRefused(err, requested) || droppedAt === tracker.highWaterMark) throw err;
            droppedAt = tracker.highWaterMark;
            tracker.dropCursor();
            requested = tracker.nextRequest();
            logger.warn(
              { err, resumeFrom: requested },
              'the upstream refused the export cursor; reading on from the high-water mark instead',
            );
            nextPage = fetchPage(requested);
            continue;
          }
          // The next page is slow (a 429's Retry-After, 5xx backoff): the rows read so far are
          // committed when their transaction is CONNECTOR_TX_MAX_MS old, not when the page comes
          // (unless `unvouched`: that page waits for this one).
          if (page === undefined) await commitOpen(positionNow());
        }
        let vouched: boolean;
        try {
          vouched = cursorCheck.check(requested, page.nextCursor, identityOf(page));
        } catch (err) {
          // None of this page's rows is admitted. Pages read without a cursor before it are sound:
          // committed, with the cursor the last one named, from which a restart with the parameter's
          // right name reads on. A page read with a cursor since the last commit may be the first
          // page served again, unnoticed under a fresh cursor when the page before it was another
          // (after a restart on a stored cursor, or a resume below the mark): the open transaction
          // is dropped instead.
          const position = positionNow();
          const open = batch.length + rejected.length > 0 || position !== lastCommittedPosition;
          if (open && !cursorPageOpen) await commitOpen(position);
          throw err;
        }
        metrics.setState('running');
        metrics.pages.inc();
        admit(page, tracker, batch, rejected);
        if (requested.cursor !== undefined) {
          cursorPageOpen = true;
          // A page vouched for answering a cursor vouches for the one before it too.
          unvouched = !vouched;
        }
        tracker.pageDone(page.nextCursor);
        metrics.deduplicated.inc(tracker.counters.deduplicated - dedupSeen);
        dedupSeen = tracker.counters.deduplicated;
        const caughtUp = caughtUpAt(requested, page.nextCursor, page.kinds.length);
        const rows = batch.length + rejected.length;
        const position = positionNow();
        const due =
          caughtUp || (!unvouched && (rows >= deps.txMaxRows || now() - batchStarted >= deps.txMaxMs));
        const idle = now() - lastCommitAt >= IDLE_COMMIT_MS;
        if (due && (rows > 0 || position !== lastCommittedPosition || idle)) await commitOpen(position);
        if (caughtUp) {
          if (inflight) await inflight;
          inflight = undefined;
          progressed();
          metrics.setState('caught_up');
          await sleep(deps.pollIntervalMs, controller.signal);
        }
        requested = tracker.nextRequest();
        nextPage = fetchPage(requested);
      }
    } finally {
      // Let the open transaction finish: it is either committed whole or aborted by the broker.
      let lastCommitFailure: unknown;
      if (inflight) await inflight.catch((err: unknown) => (lastCommitFailure = err));
      sessionOpen = false;
      await session
        .close()
        .catch((err: unknown) => logger.warn({ err }, 'closing the publish session failed'));
      // Stopping, the session ends without looking at its last commit: one that could not be ridden
      // out (fenced by another instance) is still the outcome, and its exit code.
      if (controller.signal.aborted && lastCommitFailure !== undefined && !isRetriable(lastCommitFailure))
        // biome-ignore lint/correctness/noUnsafeFinally: the stop's own AbortedError is the lesser news
        throw lastCommitFailure;
    }
  };

  /**
   * Rides out retriable failures (broker outage, upstream trouble) with a fresh session each time.
   * The backoff counts failures since a session last progressed (committed, or caught up), so an
   * outage weeks after earlier ones starts again from the shortest wait. A session that opens and
   * reads but never commits does not count as healthy: its failures keep growing the wait.
   */
  const supervise = async (): Promise<void> => {
    let attempt = 0;
    const progressed = () => {
      attempt = 0;
    };
    for (;;) {
      try {
        await runSession(progressed);
        return;
      } catch (err) {
        // A failure while stopping ends the run as a stop, unless it is one no retry would have
        // ridden out either (fenced by another instance: exit code 4, not 0).
        if (controller.signal.aborted && (isRetriable(err) || findError(err, 'ABORTED'))) return;
        if (!isRetriable(err)) throw err;
        attempt++;
        const delayMs = backoffDelay(Math.min(attempt, 8), defaultRetryPolicy);
        const kafka = findError(err, 'KAFKA') !== undefined;
        metrics.setState(kafka ? 'waiting_for_kafka' : 'backing_off');
        metrics.backoffSeconds.inc(delayMs / 1000);
        logger.warn(
          { err, delayMs, attempt },
          kafka ? 'Kafka unavailable, waiting' : 'connector session failed, retrying',
        );
        try {
          await sleep(delayMs, controller.signal);
        } catch (e) {
          if (e instanceof AbortedError) return;
          throw e;
        }
      }
    }
  };

  return {
    start() {
      running ??= supervise().finally(() => metrics.setState('stopped'));
      return running;
    },
    async stop() {
      controller.abort(new AbortedError('connector stopping'));
      await running?.catch(swallow);
    },
    ready() {
      if (!sessionOpen) return { ready: false, reason: `connector ${metrics.state}` };
      const state = metrics.state;
      return state === 'running' || state === 'caught_up' ? { ready: true } : { ready: false, reason: state };
    },
  };
}
