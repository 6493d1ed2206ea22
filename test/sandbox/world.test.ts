import { isValidIBAN } from 'ibantools';
import { describe, expect, it } from 'vitest';
import { reportsOf } from '../../src/sandbox/details.ts';
import { Feed } from '../../src/sandbox/feed.ts';
import { prng } from '../../src/sandbox/prng.ts';
import { World } from '../../src/sandbox/world.ts';

const at = Date.parse('2026-11-22T09:30:00.000Z');
const world = (seed: number, alerts = 300) => new World({ apiKeys: ['a', 'b'], alerts, seed, now: () => at });

describe('seeded data', () => {
  it('is the same for the same seed, changes included, and differs for another seed', () => {
    const one = world(5);
    const two = world(5);
    one.applyChanges(40, 0.2);
    two.applyChanges(40, 0.2);
    expect(one.currentRows()).toEqual(two.currentRows());
    expect(world(6).currentRows()).not.toEqual(world(5).currentRows());
  });

  it('holds valid IBANs of several countries, every qualification and inactive alerts', () => {
    const rows = world(1, 2000).currentRows();
    expect(rows.every((r) => isValidIBAN(r.iban))).toBe(true);
    expect(new Set(rows.map((r) => r.iban.slice(0, 2))).size).toBeGreaterThanOrEqual(5);
    expect(new Set(rows.map((r) => r.qualification))).toEqual(
      new Set(['PENDING', 'CONFIRMED', 'REJECTED', 'UNDER_INVESTIGATION']),
    );
    expect(rows.some((r) => r.isActive === false)).toBe(true);
  });

  it('contains groups of rows sharing one millisecond', () => {
    const rows = world(1, 1000).currentRows();
    const times = rows.map((r) => (typeof r.updatedAt === 'number' ? r.updatedAt : Date.parse(r.updatedAt)));
    const shared = times.filter((t, k) => k > 0 && t === times[k - 1]).length;
    expect(shared).toBeGreaterThan(100);
  });

  it('derives as many reports as reportsCount, in time order, none after the last update', () => {
    let now = at;
    const w = new World({ apiKeys: ['a'], alerts: 30, seed: 2, now: () => now });
    for (let k = 0; k < 60; k++) {
      now += 1000;
      w.applyChanges(1);
    }
    for (let i = 0; i < w.alerts.length; i++) {
      const times = reportsOf(w, i).map((r) => Date.parse(r.reportedAt));
      expect(times).toHaveLength(w.alerts.reports[i] as number);
      expect(times).toEqual([...times].sort((x, y) => x - y));
      expect(Math.max(...times)).toBeLessThanOrEqual(w.alerts.updatedAt[i] as number);
    }
  });

  it('never moves updatedAt backwards when the clock does', () => {
    let now = at;
    const w = new World({ apiKeys: ['a'], alerts: 10, seed: 1, now: () => now });
    w.applyChanges(3);
    now -= 60_000;
    w.applyChanges(3);
    const rows = w.currentRows();
    const last = rows.at(-1)?.updatedAt;
    expect(typeof last === 'number' ? last : Date.parse(String(last))).toBeGreaterThanOrEqual(at);
  });
});

describe('feed log', () => {
  it('serves every change made before a walk reaches the end, once per walk, through compactions', () => {
    // A model: alert -> current version; the feed must hand a cursor walk each version live at the
    // time the walk passes it, whatever changes happen between pages.
    const rand = prng(9);
    const version = new Map<number, number>();
    const seqOf = new Map<number, number>();
    const feed = new Feed((ref, seq) => seqOf.get(ref) === seq);
    let clock = 1;
    const change = (ref: number) => {
      const superseded = seqOf.has(ref);
      seqOf.set(ref, feed.append(ref, clock));
      if (superseded) feed.superseded();
      version.set(ref, (version.get(ref) ?? 0) + 1);
    };
    for (let ref = 0; ref < 1000; ref++) change(ref);
    let cursor: number | undefined;
    const served = new Map<string, number>();
    let pages = 0;
    let changes = 0;
    for (;;) {
      const page = feed.page(cursor === undefined ? {} : { afterSeq: cursor }, 100);
      for (const ref of page.refs) {
        const key = `${ref}@${version.get(ref)}`;
        served.set(key, (served.get(key) ?? 0) + 1);
      }
      pages++;
      if (page.end || pages > 10_000) break;
      cursor = page.lastSeq;
      // Change a random batch (sometimes alerts already served, sometimes not), all in one ms.
      clock++;
      const batch = Math.floor(rand() * 140);
      changes += batch;
      for (let k = 0; k < batch; k++) change(Math.floor(rand() * 1000));
    }
    expect(pages).toBeGreaterThan(10);
    expect(pages).toBeLessThan(10_000);
    // Enough changes that dead entries outnumbered live ones: the log was compacted mid-walk.
    expect(changes).toBeGreaterThan(1100);
    // No version was served twice, and the final version of every alert was served.
    expect([...served.values()].every((n) => n === 1)).toBe(true);
    for (const [ref, v] of version) expect(served.has(`${ref}@${v}`)).toBe(true);
    expect(feed.size).toBe(1000);
  });

  it('finds updatedAfter positions exclusively and treats an unknown cursor past the end as caught up', () => {
    const seqOf = new Map<number, number>();
    const feed = new Feed((ref, seq) => seqOf.get(ref) === seq);
    for (let ref = 0; ref < 10; ref++) seqOf.set(ref, feed.append(ref, 100 + Math.floor(ref / 3)));
    expect(feed.page({ updatedAfter: 100 }, 100).refs).toEqual([3, 4, 5, 6, 7, 8, 9]);
    expect(feed.page({ updatedAfter: 99 }, 2)).toEqual({ refs: [0, 1], lastSeq: 2, end: false });
    expect(feed.page({ afterSeq: 1_000 }, 10)).toEqual({ refs: [], lastSeq: 1_000, end: true });
  });
});
