import { createHmac, randomBytes } from 'node:crypto';
import { grown } from './columns.ts';

/** Tells whether the entry `seq` of `ref` still shows its alert's current state. */
export type Liveness = (ref: number, seq: number) => boolean;

export interface FeedPage {
  /** The refs of the page's live entries, in feed order. */
  refs: number[];
  /** Seq of the page's last entry, the position a cursor resumes after. */
  lastSeq: number;
  /** True when no live entry follows the page: the consumer has caught up. */
  end: boolean;
}

/**
 * The export feed: an append-only log ordered by (updatedAt, seq). A change appends the alert's new
 * entry at the end, with updatedAt = now (never earlier than the last entry) and the next seq, so a
 * change can never land behind an open cursor, and its previous entry goes dead (skipped, and
 * dropped when dead entries outnumber live ones). Since seq and updatedAt grow together, a cursor
 * (a seq) and `updatedAfter` are both binary searches: a page costs O(log n + page size). Entries
 * live in typed arrays, 20 bytes each.
 */
export class Feed {
  #seq = new Float64Array(1024);
  #at = new Float64Array(1024);
  /** An alert index, or a negative number naming a malformed row (see World). */
  #ref = new Int32Array(1024);
  #length = 0;
  #dead = 0;
  #nextSeq = 1;
  readonly #isLive: Liveness;

  constructor(isLive: Liveness) {
    this.#isLive = isLive;
  }

  get lastAt(): number {
    return this.#length === 0 ? 0 : (this.#at[this.#length - 1] ?? 0);
  }

  /** Live entries. */
  get size(): number {
    return this.#length - this.#dead;
  }

  /** Appends an entry and answers its seq; `at` is raised to the last entry's if earlier. */
  append(ref: number, at: number): number {
    if (this.#length === this.#seq.length) {
      const capacity = this.#length * 2;
      this.#seq = grown(this.#seq, capacity);
      this.#at = grown(this.#at, capacity);
      this.#ref = grown(this.#ref, capacity);
    }
    const seq = this.#nextSeq++;
    this.#seq[this.#length] = seq;
    this.#at[this.#length] = Math.max(at, this.lastAt);
    this.#ref[this.#length] = ref;
    this.#length++;
    return seq;
  }

  /** Counts one more dead entry; call it once the alert points at its new entry (compaction asks). */
  superseded(): void {
    this.#dead++;
    if (this.#dead > 1024 && this.#dead > this.#length - this.#dead) this.#compact();
  }

  #compact(): void {
    let kept = 0;
    for (let i = 0; i < this.#length; i++) {
      const seq = this.#seq[i] as number;
      const ref = this.#ref[i] as number;
      if (!this.#isLive(ref, seq)) continue;
      this.#seq[kept] = seq;
      this.#at[kept] = this.#at[i] as number;
      this.#ref[kept] = ref;
      kept++;
    }
    this.#length = kept;
    this.#dead = 0;
  }

  /** Index of the first entry whose column value is greater than `value`. */
  #after(column: Float64Array, value: number): number {
    let lo = 0;
    let hi = this.#length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((column[mid] as number) <= value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Up to `size` live entries after the cursor position and after `updatedAfter` (exclusive). */
  page(from: { afterSeq?: number; updatedAfter?: number }, size: number): FeedPage {
    let i = from.afterSeq === undefined ? 0 : this.#after(this.#seq, from.afterSeq);
    if (from.updatedAfter !== undefined) i = Math.max(i, this.#after(this.#at, from.updatedAfter));
    const refs: number[] = [];
    let lastSeq = from.afterSeq ?? 0;
    for (; i < this.#length && refs.length < size; i++) {
      const ref = this.#ref[i] as number;
      const seq = this.#seq[i] as number;
      if (!this.#isLive(ref, seq)) continue;
      refs.push(ref);
      lastSeq = seq;
    }
    // Skip trailing dead entries so that a page ending the live feed says so.
    while (i < this.#length && !this.#isLive(this.#ref[i] as number, this.#seq[i] as number)) i++;
    return { refs, lastSeq, end: i >= this.#length };
  }

  /** The refs of every live entry, in feed order. */
  liveRefs(): number[] {
    return this.page({}, Number.POSITIVE_INFINITY).refs;
  }
}

/**
 * Cursors are opaque to clients and signed: base64url of `v2.<seq>.<mac>`, so the feed honours only
 * a cursor it issued, never a position read out of a forged or edited one. The key is drawn anew for
 * each feed (each sandbox made): another sandbox's feed, even of the same seed, differs past its
 * seeded backlog (other `--alerts`, changes made at other times, admin calls), and a cursor of the
 * old one would skip rows of the new one unannounced. Refused (400), it has the connector read on
 * from its high-water mark instead, which loses nothing.
 */
export class CursorCodec {
  readonly #key = randomBytes(32);

  encode(seq: number): string {
    const mac = createHmac('sha256', this.#key).update(`v2.${seq}`).digest('base64url').slice(0, 22);
    return Buffer.from(`v2.${seq}.${mac}`).toString('base64url');
  }

  /** The seq of a cursor this codec issued, exactly as issued; undefined for anything else. */
  decode(cursor: string): number | undefined {
    const match = /^v2\.(\d{1,15})\./.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
    if (!match) return undefined;
    const seq = Number(match[1]);
    // Compared as text: base64url Buffer reads alike (padding, stray characters) or a seq with
    // leading zeros would be other spellings of one cursor.
    return this.encode(seq) === cursor ? seq : undefined;
  }
}
