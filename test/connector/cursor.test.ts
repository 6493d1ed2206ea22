import { describe, expect, it } from 'vitest';
import { CursorTracker, parseCursorRecord, serializeCursorRecord } from '../../src/connector/cursor.ts';
import { DecodeError } from '../../src/errors.ts';
import { parseInstant } from '../../src/instant.ts';

/** Microseconds since the epoch of `…ss.ffffffZ`, as an upstream that keeps them would compare. */
function micros(iso: string): number {
  const [, whole, fraction = ''] = /^(.*?)(?:\.(\d+))?Z$/.exec(iso) ?? [];
  return Date.parse(`${whole}Z`) * 1000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

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
    tracker.admitEvent(1000, 'e1');
    tracker.pageDone('next-1');
    expect(tracker.nextRequest()).toEqual({ cursor: 'next-1' });
  });

  it('resumes 1 ms below the high-water mark once caught up, so rows at the mark are served again', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(1000, 'e1');
    tracker.admitEvent(2000, 'e2');
    tracker.pageDone(null);
    expect(tracker.nextRequest()).toEqual({ updatedAfter: new Date(1999).toISOString() });
  });

  it('does not publish again a row served again at the mark, also after a restart from the record', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    expect(tracker.admitEvent(2000, 'a')).toBe(true);
    expect(tracker.admitEvent(2000, 'b')).toBe(true);
    tracker.pageDone(null);
    const restarted = new CursorTracker(parseCursorRecord(serializeCursorRecord(tracker.snapshot())));
    expect(restarted.admitEvent(2000, 'a')).toBe(false);
    expect(restarted.admitEvent(2000, 'b')).toBe(false);
    expect(restarted.admitEvent(2000, 'c')).toBe(true);
    expect(restarted.counters).toEqual({ published: 3, rejected: 0, deduplicated: 2, pages: 1 });
  });

  it('forgets the rows of a mark once the mark moves on', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a');
    tracker.admitEvent(3000, 'b');
    expect(tracker.snapshot().eventIdsAtMark).toEqual(['b']);
    expect(tracker.admitEvent(3000, 'a')).toBe(true);
  });

  it('rejects a bad row served again only once, by fingerprint, even without a readable updatedAt', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a');
    expect(tracker.admitRejected(null, 'fp1')).toBe(true);
    expect(tracker.admitRejected(2000, 'fp2')).toBe(true);
    tracker.pageDone(null);
    expect(tracker.admitEvent(2000, 'a')).toBe(false);
    expect(tracker.admitRejected(null, 'fp1')).toBe(false);
    expect(tracker.admitRejected(2000, 'fp2')).toBe(false);
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
        return r.id === 'bad' ? tracker.admitRejected(at, `fp-${r.id}`) : tracker.admitEvent(at, r.id);
      });
      tracker.pageDone(null);
      return admitted;
    };
    const tracker = CursorTracker.initial('c', 'earliest');
    expect(pass(tracker)).toEqual([true, true, true]);
    expect(tracker.nextRequest()).toEqual({ updatedAfter: '2026-01-01T00:00:00.001Z' });
    expect(pass(tracker)).toEqual([false, false, false]);
    const restarted = new CursorTracker(parseCursorRecord(serializeCursorRecord(tracker.snapshot())));
    expect(pass(restarted)).toEqual([false, false, false]);
    expect(restarted.counters).toEqual({ published: 2, rejected: 1, deduplicated: 6, pages: 3 });
  });

  it('admits the whole first page after EXPORT_START or a reset, which have no mark yet', () => {
    const tracker = CursorTracker.initial('c', new Date('2026-01-01T00:00:00.001Z'));
    expect(tracker.admitEvent(parseInstant('2026-01-01T00:00:00.001500Z') as number, 'a1')).toBe(true);
    expect(tracker.admitEvent(parseInstant('2026-01-01T00:00:00.002100Z') as number, 'a2')).toBe(true);
  });

  it('publishes a late row below the mark rather than drop it', () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'a');
    expect(tracker.admitEvent(1500, 'late')).toBe(true);
    expect(tracker.highWaterMark).toBe(2000);
  });
});

describe('cursor record', () => {
  it('refuses a record that is not JSON or lacks fields, with a typed error', () => {
    expect(() => parseCursorRecord(Buffer.from('{nope'))).toThrow(DecodeError);
    expect(() => parseCursorRecord(Buffer.from('{"version":1}'))).toThrow(/cursor record is malformed/);
  });
});
