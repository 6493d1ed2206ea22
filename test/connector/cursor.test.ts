import { describe, expect, it } from 'vitest';
import {
  CursorTracker,
  MAX_REJECTED_AFTER_MARK,
  parseCursorRecord,
  serializeCursorRecord,
} from '../../src/connector/cursor.ts';
import { eventIdOf, fingerprintOf, mapRow, rowFingerprintOf } from '../../src/connector/rows.ts';
import { DecodeError, InvalidInputError } from '../../src/errors.ts';
import { parseInstant } from '../../src/instant.ts';

/** Microseconds since the epoch of `…ss.ffffffZ`, as an upstream that keeps them would compare. */
function micros(iso: string): number {
  const [, whole, fraction = ''] = /^(.*?)(?:\.(\d+))?Z$/.exec(iso) ?? [];
  return Date.parse(`${whole}Z`) * 1000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

/** The tracker a restart makes from the cursor record `tracker` would commit now. */
const restartedFrom = (tracker: CursorTracker) =>
  new CursorTracker(parseCursorRecord(serializeCursorRecord(tracker.snapshot())));

/** The tracker a restart makes from a cursor record given as JSON (as another release wrote it). */
const trackerOfJson = (record: object) =>
  new CursorTracker(parseCursorRecord(Buffer.from(JSON.stringify(record))));

describe('CursorTracker', () => {
  it('starts from the beginning of the feed on a first run with EXPORT_START=earliest', () => {
    expect(CursorTracker.initial('c', 'earliest').nextRequest()).toEqual({});
  });

  it('starts from EXPORT_START on a first run with an instant', () => {
    const tracker = CursorTracker.initial('c', new Date('2026-01-01T00:00:00Z'));
    expect(tracker.nextRequest()).toEqual({ updatedAfter: '2026-01-01T00:00:00.000Z' });
  });

  it('follows the stored cursor while the feed has pages', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(1000, 'e1', 'e1', 'e1');
    tracker.pageDone('next-1');
    expect(tracker.nextRequest()).toEqual({ cursor: 'next-1' });
  });

  it('resumes 1 ms below the high-water mark once caught up, so rows at the mark are served again', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(1000, 'e1', 'e1', 'e1');
    tracker.admitEvent(2000, 'e2', 'e2', 'e2');
    tracker.pageDone(null);
    expect(tracker.nextRequest()).toEqual({ updatedAfter: new Date(1999).toISOString() });
  });

  it('does not publish again a row served again at the mark, also after a restart from the record', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    expect(tracker.admitEvent(2000, 'a', 'a', 'a')).toBe(true);
    expect(tracker.admitEvent(2000, 'b', 'b', 'b')).toBe(true);
    tracker.pageDone(null);
    const restarted = restartedFrom(tracker);
    expect(restarted.admitEvent(2000, 'a', 'a', 'a')).toBe(false);
    expect(restarted.admitEvent(2000, 'b', 'b', 'b')).toBe(false);
    expect(restarted.admitEvent(2000, 'c', 'c', 'c')).toBe(true);
    expect(restarted.counters).toEqual({ published: 3, rejected: 0, deduplicated: 2, pages: 1 });
  });

  it('publishes a second change of an alert served again at the mark with the same updatedAt and isActive', () => {
    // One-second timestamps: two changes within one second share updatedAt, and so the event id.
    const first = { id: 'A', iban: 'DE89370400440532013000', bic: null, qualification: 'PENDING' };
    const v1 = { ...first, reportsCount: 1, updatedAt: '2026-05-01T10:00:00Z', isActive: true };
    const v2 = { ...v1, qualification: 'CONFIRMED', reportsCount: 2 };
    const admit = (tracker: CursorTracker, row: unknown): boolean => {
      const mapped = mapRow(row, 0);
      if (!mapped.ok) throw new Error('test rows must map');
      const { updatedAt, eventId } = mapped.event;
      return tracker.admitEvent(updatedAt, eventId, rowFingerprintOf(mapped.event), mapped.event.alertId);
    };
    const tracker = CursorTracker.initial('c', 'earliest');
    expect(admit(tracker, v1)).toBe(true);
    tracker.pageDone(null);
    expect(admit(tracker, v2)).toBe(true);
    tracker.pageDone(null);
    const restarted = restartedFrom(tracker);
    expect(admit(restarted, v2)).toBe(false);
    // v1, superseded, is not remembered: the feed serves only an alert's current state again.
    expect(restarted.snapshot()).toMatchObject({ rowsAtMark: [expect.any(String)], alertIdsAtMark: ['A'] });
  });

  // Regression: the reactivation was taken for the first version served again and dropped, leaving
  // AlertDeactivated as the alert's last event while the upstream had it active.
  it('publishes a change back to an earlier version at the mark (active, inactive, active again within one millisecond), also after restarts', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    const restart = (t: CursorTracker) => restartedFrom(t);
    const active = ['e-active', 'fp-active', 'A'] as const;
    const inactive = ['e-inactive', 'fp-inactive', 'A'] as const;
    // Each read resumes just below the mark and serves the alert's state at that time.
    expect(tracker.admitEvent(2000, ...active)).toBe(true);
    tracker.pageDone(null);
    expect(tracker.admitEvent(2000, ...inactive)).toBe(true);
    tracker.pageDone(null);
    expect(tracker.admitEvent(2000, ...active)).toBe(true);
    tracker.pageDone(null);
    expect(tracker.admitEvent(2000, ...active)).toBe(false);
    const restarted = restart(tracker);
    expect(restarted.admitEvent(2000, ...active)).toBe(false);
    expect(restarted.admitEvent(2000, ...inactive)).toBe(true);
    restarted.pageDone(null);
    const again = restart(restarted);
    expect(again.admitEvent(2000, ...inactive)).toBe(false);
    expect(again.admitEvent(2000, ...active)).toBe(true);
    expect(again.counters).toMatchObject({ published: 5, deduplicated: 3 });
  });

  it('reads a cursor record written before alertIdsAtMark: its rows at the mark are recognised until their alert changes', () => {
    // As the release before alertIdsAtMark wrote it: fingerprints of every row published at the mark.
    const older = {
      version: 1,
      connector: 'c',
      cursor: null,
      highWaterMark: 2000,
      highWaterMarkIso: new Date(2000).toISOString(),
      eventIdsAtMark: [],
      rowsAtMark: ['fp-a1', 'fp-b'],
      rejectedAtMark: [],
      rejectedAfterMark: [],
      resumingBelowMark: true,
      counters: { published: 2, rejected: 0, deduplicated: 0, pages: 1 },
      exportStart: 'earliest',
      writtenAt: new Date(3000).toISOString(),
    };
    const upgraded = trackerOfJson(older);
    expect(upgraded.admitEvent(2000, 'e-a1', 'fp-a1', 'a')).toBe(false);
    expect(upgraded.admitEvent(2000, 'e-b', 'fp-b', 'b')).toBe(false);
    expect(upgraded.admitEvent(2000, 'e-c', 'fp-c', 'c')).toBe(true);
    // Once a changes, its latest version is known: a change back to the first one is new.
    expect(upgraded.admitEvent(2000, 'e-a2', 'fp-a2', 'a')).toBe(true);
    expect(upgraded.admitEvent(2000, 'e-a1', 'fp-a1', 'a')).toBe(true);
    const again = restartedFrom(upgraded);
    expect(again.admitEvent(2000, 'e-a1', 'fp-a1', 'a')).toBe(false);
    expect(again.admitEvent(2000, 'e-b', 'fp-b', 'b')).toBe(false);
    expect(again.admitEvent(2000, 'e-c', 'fp-c', 'c')).toBe(false);
    expect(again.admitEvent(3000, 'e-d', 'fp-d', 'd')).toBe(true);
    expect(again.snapshot()).toMatchObject({ rowsAtMark: ['fp-d'], alertIdsAtMark: ['d'] });
  });

  it('matches rows at the mark by event id in a cursor record written before rowsAtMark, until the mark moves', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'id-a', 'row-a', 'a');
    tracker.pageDone(null);
    const { rowsAtMark, alertIdsAtMark, ...rest } = tracker.snapshot();
    expect(rowsAtMark).toEqual(['row-a']);
    expect(alertIdsAtMark).toEqual(['a']);
    const older = { ...rest, eventIdsAtMark: ['id-a'] };
    const upgraded = trackerOfJson(older);
    expect(upgraded.admitEvent(2000, 'id-a', 'row-a2', 'a')).toBe(false);
    expect(upgraded.admitEvent(2000, 'id-b', 'row-b', 'b')).toBe(true);
    // The old record's ids are written on as they are: a later restart still knows them.
    const again = restartedFrom(upgraded);
    expect(again.admitEvent(2000, 'id-a', 'row-a2', 'a')).toBe(false);
    expect(again.admitEvent(2000, 'id-b', 'row-b', 'b')).toBe(false);
    expect(again.admitEvent(3000, 'id-c', 'row-c', 'c')).toBe(true);
    expect(again.snapshot().rowsAtMark).toEqual(['row-c']);
  });

  it('keeps 12,000 rows sharing one millisecond in a cursor record well under 1 MiB, without their event ids', () => {
    // Regression: each row's 64-digit event id was written beside its fingerprint (~1.03 MB here).
    // Each costs its fingerprint and its alert id (`alert-1234`: ~33 bytes in all).
    const tracker = CursorTracker.initial('c', 'earliest');
    for (let i = 0; i < 12_000; i++) {
      const eventId = eventIdOf(`alert-${i}`, 2000, true);
      expect(tracker.admitEvent(2000, eventId, eventId.slice(0, 16), `alert-${i}`)).toBe(true);
    }
    const record = tracker.snapshot();
    expect(record.eventIdsAtMark).toEqual([]);
    expect(serializeCursorRecord(record).length).toBeLessThan(420_000);
    const restarted = new CursorTracker(parseCursorRecord(serializeCursorRecord(record)));
    const eventId = eventIdOf('alert-7', 2000, true);
    expect(restarted.admitEvent(2000, eventId, eventId.slice(0, 16), 'alert-7')).toBe(false);
  });

  it('reads a cursor record without eventIdsAtMark', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'id-a', 'row-a', 'a');
    const { eventIdsAtMark, ...newer } = tracker.snapshot();
    const restarted = trackerOfJson(newer);
    expect(restarted.admitEvent(2000, 'id-a', 'row-a', 'a')).toBe(false);
  });

  it('forgets the rows of a mark once the mark moves on', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a', 'a', 'a');
    tracker.admitEvent(3000, 'b', 'b', 'b');
    expect(tracker.snapshot().rowsAtMark).toEqual(['b']);
    expect(tracker.admitEvent(3000, 'a', 'a', 'a')).toBe(true);
  });

  it('rejects a bad row served again only once, by fingerprint, even without a readable updatedAt', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a', 'a', 'a');
    expect(tracker.admitRejected(null, 'fp1')).toBe(true);
    expect(tracker.admitRejected(2000, 'fp2')).toBe(true);
    tracker.pageDone(null);
    expect(tracker.admitEvent(2000, 'a', 'a', 'a')).toBe(false);
    expect(tracker.admitRejected(null, 'fp1')).toBe(false);
    expect(tracker.admitRejected(2000, 'fp2')).toBe(false);
  });

  it('rejects a bad row without a readable updatedAt once, when a later row moved the mark to its real time', () => {
    const T1 = Date.parse('2026-05-01T10:00:00.000Z');
    const good = {
      id: 'A',
      iban: 'DE89370400440532013000',
      bic: null,
      qualification: 'PENDING',
      reportsCount: 1,
    };
    const good1 = { ...good, updatedAt: new Date(T1).toISOString(), isActive: true };
    // Its real time is T1 + 5 ms, as the feed's order and a read from T1 + 4 ms show.
    const bad = { ...good, id: 'BAD', updatedAt: 'yesterday', isActive: true };
    const good2 = { ...good1, id: 'B', updatedAt: new Date(T1 + 5).toISOString() };
    /** Admits one page; returns the ids handed on (events and DLQ). */
    const page = (tracker: CursorTracker, rows: unknown[], next: string | null): string[] => {
      const out: string[] = [];
      for (const row of rows) {
        const m = mapRow(row, 0);
        const fresh = m.ok
          ? tracker.admitEvent(m.event.updatedAt, m.event.eventId, rowFingerprintOf(m.event), m.event.alertId)
          : tracker.admitRejected(m.updatedAt, fingerprintOf(JSON.stringify(row)));
        if (fresh) out.push(m.ok ? m.event.alertId : `dlq:${m.id}`);
      }
      tracker.pageDone(next);
      return out;
    };
    const restart = (t: CursorTracker) => restartedFrom(t);

    const tracker = CursorTracker.initial('c', 'earliest');
    expect(page(tracker, [good1, bad, good2], null)).toEqual(['A', 'dlq:BAD', 'B']);
    expect(tracker.nextRequest()).toEqual({ updatedAfter: new Date(T1 + 4).toISOString() });
    expect(page(tracker, [bad, good2], null)).toEqual([]);
    expect(page(restart(tracker), [bad, good2], null)).toEqual([]);

    // The same feed over two pages, with a restart between them (the cursor record carries it).
    const paged = CursorTracker.initial('c', 'earliest');
    expect(page(paged, [good1, bad], 'p2')).toEqual(['A', 'dlq:BAD']);
    const resumed = restart(paged);
    expect(page(resumed, [good2], null)).toEqual(['B']);
    expect(page(restart(resumed), [bad, good2], null)).toEqual([]);
  });

  it('rejects a bad row without a readable updatedAt once, when the row moving the mark to its real time comes in a later pass', () => {
    // Regression: the row at the mark served again by the resume handed the bad row over to that
    // mark, which the next row then left, forgetting it; it was rejected again from that row's time.
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a', 'a', 'a');
    expect(tracker.admitRejected(null, 'fp-bad')).toBe(true);
    tracker.pageDone(null);
    // Resumed from 1999 ms: a and the bad row again, then B, changed in the bad row's millisecond.
    expect(tracker.admitEvent(2000, 'a', 'a', 'a')).toBe(false);
    expect(tracker.admitRejected(null, 'fp-bad')).toBe(false);
    expect(tracker.admitEvent(2005, 'B', 'B', 'B')).toBe(true);
    tracker.pageDone(null);
    // Resumed from 2004 ms: the bad row (its real time is 2005 ms) and B again.
    const restarted = restartedFrom(tracker);
    expect(restarted.admitRejected(null, 'fp-bad')).toBe(false);
    expect(restarted.admitEvent(2005, 'B', 'B', 'B')).toBe(false);
  });

  it('stops with a typed error rather than remember DLQ rows without a readable updatedAt past a bound, committing none of the excess', () => {
    // Regression: an upstream switching every updatedAt to "2025-01-02 10:00:00" (no zone) grew the
    // list without end: 20,000 rows made a 1.34 MB cursor record, refused by the broker.
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a', 'a', 'a');
    const fp = (i: number) => fingerprintOf(`{"id":"${i}","updatedAt":"2025-01-02 10:00:00"}`);
    for (let i = 0; i < MAX_REJECTED_AFTER_MARK; i++) expect(tracker.admitRejected(null, fp(i))).toBe(true);
    tracker.pageDone(null);
    const record = tracker.snapshot();
    expect(serializeCursorRecord(record).length).toBeLessThan(800_000);
    // The resumed pass serves them again: recognised, and the next new one stops the connector.
    const resumed = new CursorTracker(parseCursorRecord(serializeCursorRecord(record)));
    expect(resumed.admitEvent(2000, 'a', 'a', 'a')).toBe(false);
    for (let i = 0; i < MAX_REJECTED_AFTER_MARK; i++) expect(resumed.admitRejected(null, fp(i))).toBe(false);
    const more = () => resumed.admitRejected(null, fp(MAX_REJECTED_AFTER_MARK));
    expect(more).toThrow(InvalidInputError);
    expect(more).toThrow(/10000 rows in a row without a readable updatedAt/);
    expect(resumed.snapshot().rejectedAfterMark).toHaveLength(MAX_REJECTED_AFTER_MARK);
    // A row with a readable time ends the run: the bound counts afresh after it.
    expect(resumed.admitEvent(2001, 'b', 'b', 'b')).toBe(true);
    expect(resumed.admitRejected(null, fp(MAX_REJECTED_AFTER_MARK))).toBe(true);
  });

  it('reads a cursor record written before rejectedAfterMark', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitRejected(2000, 'fp-a');
    const { rejectedAfterMark, ...older } = tracker.snapshot();
    expect(rejectedAfterMark).toEqual([]);
    const upgraded = trackerOfJson(older);
    expect(upgraded.admitRejected(2000, 'fp-a')).toBe(false);
    expect(upgraded.admitRejected(null, 'fp-b')).toBe(true);
  });

  it('does not publish again rows with sub-millisecond updatedAt served again just below the mark', () => {
    const rows = [
      { id: 'a1', updatedAt: '2026-01-01T00:00:00.001500Z' },
      { id: 'bad', updatedAt: '2026-01-01T00:00:00.001700Z' },
      { id: 'a2', updatedAt: '2026-01-01T00:00:00.002100Z' },
    ];
    /** One pass over a feed keeping microseconds: exclusive `updatedAfter`, compared at full precision. */
    const pass = (tracker: CursorTracker): boolean[] => {
      const after = tracker.nextRequest().updatedAfter;
      const served = rows.filter((r) => after === undefined || micros(r.updatedAt) > micros(after));
      const admitted = served.map((r) => {
        const at = parseInstant(r.updatedAt) as number;
        return r.id === 'bad'
          ? tracker.admitRejected(at, `fp-${r.id}`)
          : tracker.admitEvent(at, r.id, r.id, r.id);
      });
      tracker.pageDone(null);
      return admitted;
    };
    const tracker = CursorTracker.initial('c', 'earliest');
    expect(pass(tracker)).toEqual([true, true, true]);
    expect(tracker.nextRequest()).toEqual({ updatedAfter: '2026-01-01T00:00:00.001Z' });
    expect(pass(tracker)).toEqual([false, false, false]);
    const restarted = restartedFrom(tracker);
    expect(pass(restarted)).toEqual([false, false, false]);
    expect(restarted.counters).toEqual({ published: 2, rejected: 1, deduplicated: 6, pages: 3 });
  });

  it('admits the whole first page after EXPORT_START or a reset, which have no mark yet', () => {
    const tracker = CursorTracker.initial('c', new Date('2026-01-01T00:00:00.001Z'));
    expect(tracker.admitEvent(parseInstant('2026-01-01T00:00:00.001500Z') as number, 'a1', 'a1', 'a1')).toBe(
      true,
    );
    expect(tracker.admitEvent(parseInstant('2026-01-01T00:00:00.002100Z') as number, 'a2', 'a2', 'a2')).toBe(
      true,
    );
  });

  it('publishes a new row 1 ms below the mark on a page read through the cursor, like rows further below', () => {
    // Regression: B was taken for a row served again by the resume request and dropped silently.
    const tracker = CursorTracker.initial('c', 'earliest');
    expect(tracker.admitEvent(1000, 'A', 'A', 'A')).toBe(true);
    expect(tracker.admitEvent(999, 'B', 'B', 'B')).toBe(true);
    expect(tracker.admitEvent(990, 'C', 'C', 'C')).toBe(true);
    expect(tracker.admitRejected(999, 'fp-D')).toBe(true);
    tracker.pageDone('p2');
    const restarted = restartedFrom(tracker);
    expect(restarted.admitEvent(999, 'E', 'E', 'E')).toBe(true);
  });

  it('publishes a row 1 ms below the mark that a resumed pass serves after a row at the mark', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(1000, 'A', 'A', 'A');
    tracker.pageDone(null);
    expect(tracker.admitEvent(1000, 'A', 'A', 'A')).toBe(false);
    expect(tracker.admitEvent(999, 'B', 'B', 'B')).toBe(true);
  });

  it('recognises rows just below the mark served again on the later pages of a resumed pass, also after a restart', () => {
    // An upstream keeping microseconds: many rows in the millisecond below the mark fill a page.
    const tracker = CursorTracker.initial('c', 'earliest');
    for (const id of ['x1', 'x2', 'x3']) tracker.admitEvent(999, id, id, id);
    tracker.admitEvent(1000, 'A', 'A', 'A');
    tracker.pageDone(null);
    // Resumed with updatedAfter = 999 ms: x1..x3 (999.5xx ms) are served again, two pages.
    expect(tracker.admitEvent(999, 'x1', 'x1', 'x1')).toBe(false);
    expect(tracker.admitEvent(999, 'x2', 'x2', 'x2')).toBe(false);
    tracker.pageDone('p2');
    const restarted = restartedFrom(tracker);
    expect(restarted.admitEvent(999, 'x3', 'x3', 'x3')).toBe(false);
    expect(restarted.admitEvent(1000, 'A', 'A', 'A')).toBe(false);
    expect(restarted.admitEvent(1001, 'N', 'N', 'N')).toBe(true);
  });

  it('publishes a late row below the mark rather than drop it', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a', 'a', 'a');
    expect(tracker.admitEvent(1500, 'late', 'late', 'late')).toBe(true);
    expect(tracker.highWaterMark).toBe(2000);
  });
});

describe('cursor record', () => {
  it('refuses a record that is not JSON or lacks fields, with a typed error', () => {
    expect(() => parseCursorRecord(Buffer.from('{nope'))).toThrow(DecodeError);
    expect(() => parseCursorRecord(Buffer.from('{"version":1}'))).toThrow(/cursor record is malformed/);
  });

  it('refuses a record naming more alerts at the mark than it has rows there', () => {
    const record = { ...CursorTracker.initial('c', 'earliest').snapshot(), alertIdsAtMark: ['a'] };
    expect(() => parseCursorRecord(serializeCursorRecord(record))).toThrow(
      /alertIdsAtMark names 1 alerts for 0 rowsAtMark/,
    );
  });
});
