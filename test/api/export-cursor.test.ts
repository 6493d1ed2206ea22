import { describe, expect, it } from 'vitest';
import { ExportCursorCheck } from '../../src/api/export-cursor.ts';
import { ConfigError, exitCodeFor } from '../../src/errors.ts';

describe('ExportCursorCheck', () => {
  it('passes pages that move along their cursors, and pages answering requests without a cursor', () => {
    const check = new ExportCursorCheck('cursor');
    check.check({}, 'c1', 'row-1');
    check.check({ cursor: 'c1' }, 'c2', 'row-11');
    check.check({ cursor: 'c2' }, null, 'row-21');
    // Caught up: the resume starts below the mark, with rows seen before; an empty page passes too.
    check.check({ updatedAfter: '2026-01-01T00:00:00.000Z' }, 'c3', 'row-21');
    check.check({ cursor: 'c3' }, null, undefined);
    check.check({ updatedAfter: '2026-01-01T00:00:00.000Z' }, null, undefined);
  });

  it('passes an empty page that gives the same cursor back: caught up, ask again with it', () => {
    const check = new ExportCursorCheck('cursor');
    check.check({}, 'c1', 'row-1');
    check.check({ cursor: 'c1' }, 'c1', undefined);
    check.check({ cursor: 'c1' }, 'c2', 'row-2');
  });

  it('stops with a ConfigError naming EXPORT_CURSOR_PARAM when a page answers a cursor with that cursor again', () => {
    const check = new ExportCursorCheck('token');
    check.check({}, 'c1', 'row-1');
    let thrown: unknown;
    try {
      check.check({ cursor: 'c1' }, 'c1', 'row-1');
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

  it('stops when a page answering a cursor starts with the first row of the page before it, under a fresh cursor', () => {
    const check = new ExportCursorCheck('cursor');
    check.check({}, 'c1-a', 'row-1');
    expect(() => check.check({ cursor: 'c1-a' }, 'c1-b', 'row-1')).toThrow(
      /starts with the first row of the page before it again/,
    );
  });

  it('stops when the first page after a restart on a stored cursor repeats, even if that one differed', () => {
    // The stored cursor is answered with the feed's first page (not checked: nothing came before it).
    const check = new ExportCursorCheck('cursor');
    check.check({ cursor: 'stored' }, 'c1-a', 'row-1');
    expect(() => check.check({ cursor: 'c1-a' }, 'c1-b', 'row-1')).toThrow(ConfigError);
  });
});
