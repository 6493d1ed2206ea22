import { describe, expect, it } from 'vitest';
import { CursorTracker, type ExportRequest } from '../../src/connector/cursor.ts';
import { PagePrefetch } from '../../src/connector/page-prefetch.ts';
import type { PageSource } from '../../src/connector/pages.ts';
import { type PreparedPage, preparePage } from '../../src/connector/prepare.ts';
import { UpstreamClientError, UpstreamUnauthorizedError } from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { logCapture } from '../helpers/log.ts';
import { testEncoders } from './encoders.ts';

const emptyPage = (): PreparedPage => preparePage([], null, 0, testEncoders());
const refused = () =>
  new UpstreamClientError('GET /sharing/v1/alerts/export answered 400: INVALID_CURSOR', { status: 400 });

/** Pages answered by `answer`, the requests kept. */
function pagesFrom(answer: (request: ExportRequest) => Promise<PreparedPage>) {
  const requests: ExportRequest[] = [];
  const pages: PageSource = {
    next: (request) => {
      requests.push(request);
      return answer(request);
    },
    close: async () => {},
  };
  return { requests, pages };
}

/** A tracker holding the cursor `cursor` at the high-water mark `mark`. */
function trackerAt(cursor: string, mark: number): CursorTracker {
  const record = CursorTracker.initial('c', 'earliest').snapshot(0);
  return new CursorTracker({ ...record, cursor, highWaterMark: mark, resumingBelowMark: false });
}

function prefetchOf(pages: PageSource, tracker: CursorTracker, now = () => 0) {
  const log = logCapture();
  const logger = createLogger({ level: 'warn', destination: log.stream });
  const signal = new AbortController().signal;
  return { log, prefetch: new PagePrefetch({ pages, tracker, signal, logger, now }) };
}

describe('PagePrefetch', () => {
  it('asks for the page the cursor names at once, and again on each fetchNext', async () => {
    const { requests, pages } = pagesFrom(async () => emptyPage());
    const tracker = trackerAt('c1', 1000);
    const { prefetch } = prefetchOf(pages, tracker);
    expect(requests).toEqual([{ cursor: 'c1' }]);
    expect(prefetch.requested).toEqual({ cursor: 'c1' });
    tracker.pageDone('c2');
    prefetch.fetchNext();
    expect(requests).toEqual([{ cursor: 'c1' }, { cursor: 'c2' }]);
    await expect(prefetch.receive()).resolves.toEqual(emptyPage());
  });

  it('gives up waiting at the deadline and hands over the same page once it comes', async () => {
    const page = Promise.withResolvers<PreparedPage>();
    const { requests, pages } = pagesFrom(() => page.promise);
    const { prefetch } = prefetchOf(pages, trackerAt('c1', 1000), () => 5000);
    await expect(prefetch.receive(5000)).resolves.toBeUndefined();
    page.resolve(emptyPage());
    await expect(prefetch.receive(5001)).resolves.toEqual(emptyPage());
    expect(requests).toHaveLength(1);
  });

  it('drops a refused cursor and reads on from the high-water mark, once per mark', async () => {
    const { requests, pages } = pagesFrom(async (request) => {
      if (request.cursor !== undefined) throw refused();
      return emptyPage();
    });
    const tracker = trackerAt('c1', 1000);
    const { prefetch, log } = prefetchOf(pages, tracker);
    await expect(prefetch.receive()).resolves.toEqual(emptyPage());
    const belowMark = { updatedAfter: new Date(999).toISOString() };
    expect(requests).toEqual([{ cursor: 'c1' }, belowMark]);
    expect(prefetch.requested).toEqual(belowMark);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        resumeFrom: belowMark,
        msg: expect.stringContaining('refused the export cursor'),
      }),
    );
    // The next cursor is refused too, the mark unmoved: that refusal stops the reading.
    tracker.pageDone('c2');
    prefetch.fetchNext();
    await expect(prefetch.receive()).rejects.toBeInstanceOf(UpstreamClientError);
    expect(requests).toHaveLength(3);
  });

  it('passes on a failure other than a refused cursor', async () => {
    const { requests, pages } = pagesFrom(async () => {
      throw new UpstreamUnauthorizedError('401 unknown key', { status: 401 });
    });
    const { prefetch } = prefetchOf(pages, trackerAt('c1', 1000));
    await expect(prefetch.receive()).rejects.toBeInstanceOf(UpstreamUnauthorizedError);
    expect(requests).toEqual([{ cursor: 'c1' }]);
  });
});
