import { caughtUp } from '../api/export-cursor.ts';
import { AbortedError } from '../errors.ts';
import type { ExportRequest } from './cursor.ts';
import { type AlertEncoders, type PageLimits, type PreparedPage, preparePage } from './prepare.ts';

export interface ExportPage {
  rows: unknown[];
  nextCursor: string | null;
}

/** The part of the API client the connector uses; retries (429, 5xx, resets) happen inside it. */
export interface ExportFeed {
  exportPage(
    request: ExportRequest,
    options: {
      signal: AbortSignal;
      retry: { retries: number; maxDelayMs: number };
      onRetry: (info: { attempt: number; delayMs: number; error: unknown }) => void;
    },
  ): Promise<ExportPage>;
}

/** A retry of an export request, reported for metrics and logs. */
export interface PageRetry {
  code: string;
  delayMs: number;
}

/** Export pages, fetched and prepared (mapped, Avro-encoded) for the connector loop. */
export interface PageSource {
  /** The page answering `request`; retriable upstream failures are retried inside, without end. */
  next(request: ExportRequest, signal: AbortSignal): Promise<PreparedPage>;
  close(): Promise<void>;
}

export interface PageSourceOptions {
  feed: ExportFeed;
  encoders: AlertEncoders;
  limits?: PageLimits;
  onRetry: (retry: PageRetry) => void;
  now?: () => number;
}

/** The connector backs off for as long as the upstream needs, 30 s at most between attempts. */
const exportRetry = { retries: Number.POSITIVE_INFINITY, maxDelayMs: 30_000 };

/** Fetches and prepares on the calling thread. */
export function localPageSource(options: PageSourceOptions): PageSource {
  const now = options.now ?? Date.now;
  return {
    async next(request, signal) {
      const page = await options.feed.exportPage(request, {
        signal,
        retry: exportRetry,
        onRetry: ({ delayMs, error }) =>
          options.onRetry({ code: (error as { code?: string }).code ?? 'UNKNOWN', delayMs }),
      });
      return preparePage(page.rows, page.nextCursor, now(), options.encoders, options.limits);
    },
    async close() {},
  };
}

interface Pending {
  key: string;
  controller: AbortController;
  page: Promise<PreparedPage>;
  /** Known once the page arrived: where the following page starts (null: caught up, see caughtUp). */
  nextCursor?: string | null;
}

const keyOf = (request: ExportRequest): string => JSON.stringify([request.cursor, request.updatedAfter]);

/**
 * Reads ahead: once a page names its `nextCursor`, up to `depth` following pages are fetched and
 * prepared before they are asked for, so the upstream round trip and the preparation overlap the
 * caller's work. A request that is not the expected next one drops (aborts) what was read ahead.
 * Nothing is read ahead past a caught-up page, so the poll interval is kept.
 */
export function readAhead(source: PageSource, depth: number): PageSource {
  let queue: Pending[] = [];
  let newest: Pending | undefined;
  let closed = false;

  const start = (request: ExportRequest): Pending => {
    const controller = new AbortController();
    const pending: Pending = {
      key: keyOf(request),
      controller,
      page: source.next(request, controller.signal),
    };
    newest = pending;
    pending.page.then(
      (page) => {
        pending.nextCursor = caughtUp(request, page.nextCursor, page.kinds.length) ? null : page.nextCursor;
        topUp();
      },
      () => {}, // delivered to whoever takes this page; dropped with it otherwise
    );
    return pending;
  };

  const topUp = (): void => {
    const last = newest;
    if (closed || !last || last.nextCursor == null || queue.length >= depth) return;
    queue.push(start({ cursor: last.nextCursor }));
  };

  const drop = (): void => {
    for (const p of queue) p.controller.abort(new AbortedError('read-ahead page dropped'));
    queue = [];
    newest = undefined;
  };

  return {
    next(request, signal) {
      const key = keyOf(request);
      let taken: Pending;
      if (queue[0]?.key === key) {
        taken = queue.shift() as Pending;
        topUp();
      } else {
        drop();
        taken = start(request);
      }
      if (signal.aborted) taken.controller.abort(signal.reason);
      else signal.addEventListener('abort', () => taken.controller.abort(signal.reason), { once: true });
      return taken.page;
    },
    async close() {
      closed = true;
      drop();
      await source.close();
    },
  };
}
