import { AbortedError, findError, isRetriable } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { backoffDelay, defaultRetryPolicy, sleep } from '../retry.ts';
import { InflightCommit } from './commit-ledger.ts';
import type { CursorRecord } from './cursor.ts';
import type { ConnectorMetrics } from './metrics.ts';
import type { PageRetry, PageSource } from './pages.ts';
import type { PreparedRejection } from './prepare.ts';
import type { EventType } from './rows.ts';
import { SessionLoop } from './session-loop.ts';

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
 * Where the connector is in its life: started once, it runs publish sessions one after another,
 * with backoffs between them, until stopped. It is ready only while a session is open.
 */
type Lifecycle = 'not_started' | 'between_sessions' | 'in_session' | 'stopped';

export function createConnector(deps: ConnectorDeps): Connector {
  const { metrics, logger } = deps;
  const now = deps.now ?? Date.now;
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  let lifecycle: Lifecycle = 'not_started';

  /** One producer session: its loop until stopped or failed, then the session closed. */
  const runSession = async (progressed: () => void): Promise<void> => {
    const session = await deps.openSession(controller.signal);
    lifecycle = 'in_session';
    const commits = new InflightCommit();
    try {
      const { signal } = controller;
      await new SessionLoop({ connector: deps, session, commits, progressed, signal, now }).run();
    } finally {
      // Let the open transaction finish: it is either committed whole or aborted by the broker.
      const lastCommitFailure = await commits.finish();
      lifecycle = 'between_sessions';
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
    lifecycle = 'between_sessions';
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
      running ??= supervise().finally(() => {
        lifecycle = 'stopped';
        metrics.setState('stopped');
      });
      return running;
    },
    async stop() {
      controller.abort(new AbortedError('connector stopping'));
      await running?.catch(swallow);
    },
    ready() {
      if (lifecycle !== 'in_session') return { ready: false, reason: `connector ${metrics.state}` };
      const state = metrics.state;
      return state === 'running' || state === 'caught_up' ? { ready: true } : { ready: false, reason: state };
    },
  };
}
