import { ConfigError } from '../errors.ts';
import type { ExportRequest } from './types.ts';

/**
 * True when the page answering `request` says the feed is caught up: its `nextCursor` is null
 * (docs/contract.md), or, from a service that hands the cursor back instead ("nothing new, ask again with it"), it
 * has no rows and names the cursor it answered. A reader waits its poll interval then, and reads no
 * further ahead.
 */
export function caughtUp(request: ExportRequest, nextCursor: string | null, rows: number): boolean {
  return nextCursor === null || (rows === 0 && nextCursor === request.cursor);
}

/**
 * Tells an upstream that does not read the export cursor. Its query parameter's name is a guess
 * (EXPORT_CURSOR_PARAM, not shown upstream: docs/contract.md); a service that knows it under another name
 * answers every cursor request as one without it, with the first page of the feed again, and a
 * reader following `nextCursor` would get that page for ever. Along a cursor the upstream honours,
 * each page starts past the rows of the page that gave the cursor, and names a cursor further on:
 * so a page with rows answering a cursor with that same cursor as its `nextCursor`, or that is the
 * page before it again (as many rows, the same first and last: under a fresh cursor), shows it was
 * not read. Checked on each page before any of its rows is used; O(1) a page.
 */
export class ExportCursorCheck {
  readonly #cursorParam: string;
  /** Identifies the page before (undefined when it had no rows, or there was none). */
  #previous: string | undefined;
  /** Whether the page before answered a cursor. */
  #previousAnsweredCursor = false;

  constructor(cursorParam: string) {
    this.#cursorParam = cursorParam;
  }

  /**
   * Checks the page answering `request`, which `page` identifies (pageIdentity; undefined when it
   * has no rows). Throws ConfigError (EXPORT_CURSOR_PARAM) when the page shows that the cursor sent
   * was not read. Returns whether the page is vouched for: read without a cursor, empty, or answering
   * one and unlike the page before, which answered one too. A page answering the first cursor after a
   * page read without one (the feed's start, a resume below the mark) or after a restart on a stored
   * cursor is not: should the upstream ignore the cursor, it is the feed's first page, unlike the
   * page before or with none before it, and only the next page tells.
   */
  check(request: ExportRequest, nextCursor: string | null, page: string | undefined): boolean {
    const previous = this.#previous;
    const comparable = this.#previousAnsweredCursor;
    this.#previous = page;
    this.#previousAnsweredCursor = request.cursor !== undefined;
    // An upstream ignoring the cursor answers with the feed's first page, which has rows.
    if (request.cursor === undefined || page === undefined) return true;
    if (nextCursor === request.cursor) throw this.#ignored('names that same cursor as its nextCursor');
    if (page === previous) throw this.#ignored('is the page before it again');
    return comparable;
  }

  #ignored(sign: string): ConfigError {
    return new ConfigError([
      {
        variable: 'EXPORT_CURSOR_PARAM',
        message:
          `the upstream answered the export cursor, sent as the query parameter "${this.#cursorParam}", ` +
          `with a page that ${sign}: it does not read the cursor under that name, and would serve the ` +
          "same page without end. Set EXPORT_CURSOR_PARAM to the name of the service's cursor " +
          'parameter. Stopped before using that page',
      },
    ]);
  }
}

/**
 * What ExportCursorCheck compares pages on: how many rows, and the first and last (any strings that
 * tell rows apart: fingerprints, the raw JSON). A healthy feed may start two pages with the same row
 * (re-saved unchanged within the millisecond), not serve the same page twice. Undefined without rows.
 */
export function pageIdentity(
  rows: number,
  first: string | undefined,
  last: string | undefined,
): string | undefined {
  return rows === 0 ? undefined : `${rows}\u0000${first}\u0000${last}`;
}
