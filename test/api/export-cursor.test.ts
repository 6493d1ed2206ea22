import { describe, expect, it } from 'vitest';
import { caughtUp, ExportCursorCheck, pageIdentity } from '../../src/api/export-cursor.ts';
import { ConfigError, exitCodeFor } from '../../src/errors.ts';

/** A page of `rows` rows from `first` to `last`, as ExportCursorCheck compares them. */
const page = (rows: number, first: string, last: string) => pageIdentity(rows, first, last);

describe('ExportCursorCheck', () => {
  it('passes pages that move along their cursors, and pages answering requests without a cursor', () => {
    const check = new ExportCursorCheck('cursor');
    expect(check.check({}, 'c1', page(10, 'row-1', 'row-10'))).toBe(true);
    check.check({ cursor: 'c1' }, 'c2', page(10, 'row-11', 'row-20'));
    expect(check.check({ cursor: 'c2' }, null, page(3, 'row-21', 'row-23'))).toBe(true);
    // Caught up: the resume starts below the mark, with rows seen before; an empty page passes too.
    check.check({ updatedAfter: '2026-01-01T00:00:00.000Z' }, 'c3', page(10, 'row-21', 'row-30'));
    check.check({ cursor: 'c3' }, null, undefined);
    check.check({ updatedAfter: '2026-01-01T00:00:00.000Z' }, null, undefined);
  });

  it('passes an empty page that gives the same cursor back: caught up, ask again with it', () => {
    const check = new ExportCursorCheck('cursor');
    check.check({}, 'c1', page(1, 'row-1', 'row-1'));
    check.check({ cursor: 'c1' }, 'c1', undefined);
    check.check({ cursor: 'c1' }, 'c2', page(1, 'row-2', 'row-2'));
  });

  // Regression: the first rows alone were compared, and a healthy feed whose full page's first row
  // was re-saved unchanged within the millisecond started the next page with it, and stopped.
  it('passes a page that starts with the row the page before it started with, the pages otherwise different', () => {
    const check = new ExportCursorCheck('cursor');
    check.check({}, '2', page(2, 'a1', 'a2'));
    expect(check.check({ cursor: '2' }, '4', page(2, 'a1', 'a3'))).toBe(false);
  });

  it('stops with a ConfigError naming EXPORT_CURSOR_PARAM when a page with rows answers a cursor with that cursor again', () => {
    const check = new ExportCursorCheck('token');
    check.check({}, 'c1', page(10, 'row-1', 'row-10'));
    let thrown: unknown;
    try {
      check.check({ cursor: 'c1' }, 'c1', page(10, 'row-1', 'row-10'));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).problems.map((p) => p.variable)).toEqual(['EXPORT_CURSOR_PARAM']);
    expect((thrown as ConfigError).message).toMatch(
      /EXPORT_CURSOR_PARAM: .*parameter "token", with a page that names that same cursor as its nextCursor/,
    );
    expect(exitCodeFor(thrown)).toBe(2);
  });

  it('stops when a page answering a cursor is the page before it again, under a fresh cursor', () => {
    const check = new ExportCursorCheck('cursor');
    check.check({}, 'c1-a', page(10, 'row-1', 'row-10'));
    expect(() => check.check({ cursor: 'c1-a' }, 'c1-b', page(10, 'row-1', 'row-10'))).toThrow(
      /is the page before it again/,
    );
  });

  it('does not vouch for the first page answering a cursor after a restart or a resume, and stops at the next one if that repeats it', () => {
    // The stored cursor is answered with the feed's first page: nothing before it to compare with.
    const restarted = new ExportCursorCheck('cursor');
    expect(restarted.check({ cursor: 'stored' }, 'c1-a', page(10, 'row-1', 'row-10'))).toBe(false);
    expect(() => restarted.check({ cursor: 'c1-a' }, 'c1-b', page(10, 'row-1', 'row-10'))).toThrow(
      ConfigError,
    );
    // After a resume below the mark, the feed's first page differs from the resume's.
    const resumed = new ExportCursorCheck('cursor');
    resumed.check({ updatedAfter: '2026-01-01T00:00:00.000Z' }, 'c1', page(10, 'row-90', 'row-99'));
    expect(resumed.check({ cursor: 'c1' }, 'c2', page(10, 'row-1', 'row-10'))).toBe(false);
    // A cursor read, the next page vouches for it.
    expect(resumed.check({ cursor: 'c2' }, 'c3', page(10, 'row-11', 'row-20'))).toBe(true);
  });
});

describe('caughtUp', () => {
  it('is a null nextCursor, or an empty page handing the cursor it answered back', () => {
    expect(caughtUp({ cursor: 'c1' }, null, 3)).toBe(true);
    expect(caughtUp({}, null, 0)).toBe(true);
    expect(caughtUp({ cursor: 'c1' }, 'c1', 0)).toBe(true);
    expect(caughtUp({ cursor: 'c1' }, 'c2', 0)).toBe(false);
    expect(caughtUp({}, 'c1', 0)).toBe(false);
  });
});
