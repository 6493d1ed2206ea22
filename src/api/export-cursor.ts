import { ConfigError } from '../errors.ts';
import type { ExportRequest } from './types.ts';

/**
 * Tells an upstream that does not read the export cursor. Its query parameter's name is a guess
 * (EXPORT_CURSOR_PARAM, SPEC §8: not shown upstream); a service that knows it under another name
 * answers every cursor request as one without it, with the first page of the feed again, and a
 * reader following `nextCursor` would get that page for ever. Along a cursor the upstream honours,
 * each page starts past the rows of the page that gave the cursor, and names a cursor further on:
 * so a page answering a cursor with that same cursor as its `nextCursor`, or starting with the row
 * the page before it started with (that page again, under a fresh cursor), shows it was not read.
 * Checked on each page before any of its rows is used; O(1) a page.
 */
export class ExportCursorCheck {
  readonly #cursorParam: string;
  /** Identifies the first row of the page before (undefined when it had none). */
  #previousFirstRow: string | undefined;

  constructor(cursorParam: string) {
    this.#cursorParam = cursorParam;
  }

  /**
   * The page answering `request`, whose first row `firstRow` identifies (any string that differs
   * between rows: the raw JSON, a fingerprint). Throws ConfigError (EXPORT_CURSOR_PARAM) when the
   * page shows that the cursor sent was not read.
   */
  check(request: ExportRequest, nextCursor: string | null, firstRow: string | undefined): void {
    const previous = this.#previousFirstRow;
    this.#previousFirstRow = firstRow;
    if (request.cursor === undefined) return;
    // Without rows, the same cursor back says "nothing new, ask again with it": caught up, in the
    // dialect of a service that does not answer null (SPEC §8), not a cursor left unread. A service
    // that ignored it would serve the feed's first page, and the feed has rows (the cursor came).
    if (firstRow !== undefined && nextCursor === request.cursor) {
      throw this.#ignored('names that same cursor as its nextCursor');
    }
    if (firstRow !== undefined && firstRow === previous) {
      throw this.#ignored('starts with the first row of the page before it again');
    }
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
