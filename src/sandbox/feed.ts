/**
 * The export feed as an append-only log ordered by (updatedAt, seq). A change appends the alert's
 * new row at the end with updatedAt = now (never earlier than the last entry), so it can never land
 * behind an open cursor; the alert's previous entry is marked dead and skipped. Finding a cursor or
 * an `updatedAfter` position is a binary search, so a page costs O(log n + page size).
 */
export interface FeedEntry {
  seq: number;
  updatedAt: number;
  json: string;
  /** The alert this row shows, or -1 for an injected malformed row. */
  alert: number;
  dead: boolean;
}

export class Feed {
  entries: FeedEntry[] = [];
  #current = new Map<number, FeedEntry>();
  #seq = 0;
  #deadCount = 0;

  get lastUpdatedAt(): number {
    return this.entries.at(-1)?.updatedAt ?? 0;
  }

  get size(): number {
    return this.entries.length - this.#deadCount;
  }

  append(alert: number, updatedAt: number, json: string): void {
    const previous = alert >= 0 ? this.#current.get(alert) : undefined;
    if (previous) {
      previous.dead = true;
      this.#deadCount++;
    }
    const entry = {
      seq: ++this.#seq,
      updatedAt: Math.max(updatedAt, this.lastUpdatedAt),
      json,
      alert,
      dead: false,
    };
    this.entries.push(entry);
    if (alert >= 0) this.#current.set(alert, entry);
    if (this.#deadCount > 1000 && this.#deadCount > this.entries.length / 2) this.#compact();
  }

  #compact(): void {
    this.entries = this.entries.filter((e) => !e.dead);
    this.#deadCount = 0;
  }

  /** Index of the first entry with seq > `seq`. */
  #afterSeq(seq: number): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.entries[mid]?.seq ?? 0) <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of the first entry with updatedAt > `at` (updatedAfter is exclusive). */
  #afterTime(at: number): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.entries[mid]?.updatedAt ?? 0) <= at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** One page of live rows from a position; `lastSeq` is null when the page reached the end. */
  page(
    from: { afterSeq?: number; updatedAfter?: number },
    size: number,
  ): { rows: string[]; lastSeq: number | null } {
    let i = from.afterSeq !== undefined ? this.#afterSeq(from.afterSeq) : 0;
    if (from.updatedAfter !== undefined) i = Math.max(i, this.#afterTime(from.updatedAfter));
    const rows: string[] = [];
    let lastSeq = 0;
    const entries = this.entries;
    for (; i < entries.length && rows.length < size; i++) {
      const entry = entries[i] as FeedEntry;
      if (entry.dead) continue;
      rows.push(entry.json);
      lastSeq = entry.seq;
    }
    // Skip trailing dead entries so a page that ends the live feed says so.
    while (i < entries.length && entries[i]?.dead) i++;
    return { rows, lastSeq: i < entries.length ? lastSeq : null };
  }
}

export function encodeCursor(seq: number, updatedAfter: number | undefined): string {
  return Buffer.from(
    JSON.stringify(updatedAfter === undefined ? { s: seq } : { s: seq, a: updatedAfter }),
  ).toString('base64url');
}

export function decodeCursor(cursor: string): { seq: number; updatedAfter?: number } | undefined {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      s?: unknown;
      a?: unknown;
    };
    if (typeof value.s !== 'number' || !Number.isInteger(value.s)) return undefined;
    return typeof value.a === 'number' ? { seq: value.s, updatedAfter: value.a } : { seq: value.s };
  } catch {
    return undefined;
  }
}
