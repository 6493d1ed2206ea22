import { describe, expect, it } from 'vitest';
import { CursorTracker } from '../../src/connector/cursor.ts';
import { OpenTransaction } from '../../src/connector/open-transaction.ts';
import { preparePage } from '../../src/connector/prepare.ts';
import { testEncoders } from './encoders.ts';
import { EXPORT_ROW_UPDATED_AT, exportRow as row } from './export-row.ts';

const encoders = testEncoders();
const pageOf = (rows: unknown[], nextCursor: string | null = 'next') =>
  preparePage(rows, nextCursor, 0, encoders);
const cursorAt = (tracker: CursorTracker) => tracker.snapshot(0);

/** A clock the test moves by hand. */
function clock(start = 0) {
  const time = { now: start };
  return { time, now: () => time.now };
}

describe('OpenTransaction', () => {
  it('admits the rows the cursor has not seen, in feed order, and counts those served again', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    const open = new OpenTransaction({ txMaxRows: 100, txMaxMs: 1000 }, () => 0);
    const page = pageOf([row('a'), row('bad', { isActive: 'yes' }), row('b', { isActive: false })]);
    expect(open.admit(page, tracker)).toBe(0);
    expect(open.rows).toBe(3);
    // The same rows at the mark again: none is admitted twice.
    expect(open.admit(page, tracker)).toBe(3);
    const batch = open.take(cursorAt(tracker));
    expect(batch.events.map((e) => `${e.alertId}:${e.type}`)).toEqual([
      'a:AlertUpserted',
      'b:AlertDeactivated',
    ]);
    expect(batch.events[0]).toMatchObject({
      key: 'DE89370400440532013000',
      updatedAt: Date.parse(EXPORT_ROW_UPDATED_AT),
    });
    expect(batch.rejected.map((r) => [r.id, r.code])).toEqual([['bad', 'ROW_IS_ACTIVE_INVALID']]);
  });

  it('is due at CONNECTOR_TX_MAX_ROWS rows or CONNECTOR_TX_MAX_MS after it started, and always when caught up', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    const { time, now } = clock(5000);
    const open = new OpenTransaction({ txMaxRows: 3, txMaxMs: 1000 }, now);
    expect(open.isDue(false)).toBe(false);
    expect(open.isDue(true)).toBe(true);
    expect(open.commitDeadline()).toBeUndefined(); // nothing to commit yet
    open.admit(pageOf([row('a'), row('b')]), tracker);
    expect(open.commitDeadline()).toBe(6000);
    expect(open.isDue(false)).toBe(false);
    time.now = 6000;
    expect(open.isDue(false)).toBe(true);
    time.now = 5000;
    open.admit(pageOf([row('c')]), tracker);
    expect(open.isDue(false)).toBe(true);
  });

  it('holds a page it could not vouch for until a vouched page follows or the feed is caught up', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    const { time, now } = clock();
    const open = new OpenTransaction({ txMaxRows: 1, txMaxMs: 1000 }, now);
    open.admit(pageOf([row('a'), row('b')]), tracker);
    open.heldCursorPage(false);
    time.now = 10_000;
    expect(open.holdsCursorPage).toBe(true);
    expect(open.commitDeadline()).toBeUndefined();
    expect(open.isDue(false)).toBe(false);
    expect(open.isDue(true)).toBe(true);
    // The next page vouches for it.
    open.heldCursorPage(true);
    expect(open.commitDeadline()).toBe(1000);
    expect(open.isDue(false)).toBe(true);
  });

  it('starts again empty once taken, its age counted from then', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    const { time, now } = clock();
    const open = new OpenTransaction({ txMaxRows: 100, txMaxMs: 1000 }, now);
    open.admit(pageOf([row('a')]), tracker);
    open.heldCursorPage(false);
    time.now = 700;
    const cursor = cursorAt(tracker);
    expect(open.take(cursor)).toMatchObject({ cursor, rejected: [] });
    expect(open.rows).toBe(0);
    expect(open.holdsCursorPage).toBe(false);
    open.admit(pageOf([row('b')]), tracker);
    expect(open.commitDeadline()).toBe(1700);
    time.now = 1600;
    expect(open.isDue(false)).toBe(false);
  });
});
