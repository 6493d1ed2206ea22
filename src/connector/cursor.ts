import { z } from 'zod';
import { DecodeError, InvalidInputError } from '../errors.ts';

/**
 * The connector's position in the export feed, committed in the same transaction as the events it
 * covers. Besides the opaque upstream cursor it keeps the `updatedAt` high-water mark and what was
 * already handled at that millisecond (each alert's latest version, the DLQ rows): resuming with
 * `updatedAfter = mark - 1 ms` serves those rows again, and they must not be published twice.
 */
export interface CursorRecord {
  version: 1;
  connector: string;
  cursor: string | null;
  highWaterMark: number | null;
  highWaterMarkIso: string | null;
  /**
   * Event ids published at the high-water mark, in records written before `rowsAtMark`; read from
   * those only. Written empty since (each id cost the record 67 bytes a row), still written so that
   * a release that requires the field can read the record after a rollback.
   */
  eventIdsAtMark: string[];
  /**
   * Fingerprints of the rows published at the mark (rowFingerprintOf): a row served again is matched
   * on these, not on its event id. The first `alertIdsAtMark.length` are the latest version of the
   * alert named there; any after those come from a record written before `alertIdsAtMark` (every
   * row published at the mark, alert unknown) or before this field (its `eventIdsAtMark`), and are
   * carried as they are until the mark moves.
   */
  rowsAtMark?: string[];
  /**
   * The alert of each of the first entries of `rowsAtMark`: a row at the mark is one served again
   * only if it is its alert's latest version published there, so that a change back to an earlier
   * version within the same millisecond is published. Absent from records written before this
   * field. Beside `rowsAtMark` rather than in it, so that a release before it reads the record.
   */
  alertIdsAtMark?: string[];
  /** Fingerprints of rows sent to the DLQ at the high-water mark. */
  rejectedAtMark: string[];
  /**
   * Fingerprints of rows sent to the DLQ without a readable `updatedAt` after the last row at the
   * mark: in feed order they sit at the mark or later, up to the next row with a readable time, so
   * they move with the mark to that row's time. Absent from records written before this field.
   */
  rejectedAfterMark?: string[];
  /**
   * True while the pages read answer the `updatedAfter = mark - 1 ms` request (through their cursors)
   * and no row at or past the mark has come yet: only then is a row in the millisecond just below
   * the mark one served again. Absent from records written before this field: taken as true, the
   * behaviour of those releases, until a row reaches the mark.
   */
  resumingBelowMark?: boolean;
  counters: { published: number; rejected: number; deduplicated: number; pages: number };
  exportStart: string;
  writtenAt: string;
}

const recordSchema = z.object({
  version: z.literal(1),
  connector: z.string(),
  cursor: z.string().nullable(),
  highWaterMark: z.number().int().nullable(),
  highWaterMarkIso: z.string().nullable(),
  eventIdsAtMark: z.array(z.string()).default([]),
  rowsAtMark: z.array(z.string()).optional(),
  alertIdsAtMark: z.array(z.string()).optional(),
  rejectedAtMark: z.array(z.string()),
  rejectedAfterMark: z.array(z.string()).optional(),
  resumingBelowMark: z.boolean().optional(),
  counters: z.object({
    published: z.number().int(),
    rejected: z.number().int(),
    deduplicated: z.number().int(),
    pages: z.number().int(),
  }),
  exportStart: z.string(),
  writtenAt: z.string(),
});

export function parseCursorRecord(bytes: Buffer): CursorRecord {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new DecodeError('cursor record is not JSON', { cause: err });
  }
  const parsed = recordSchema.safeParse(json);
  if (!parsed.success) {
    throw new DecodeError(
      `cursor record is malformed: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
    );
  }
  const { rowsAtMark, alertIdsAtMark = [] } = parsed.data;
  if (alertIdsAtMark.length > (rowsAtMark?.length ?? 0)) {
    throw new DecodeError(
      `cursor record is malformed: alertIdsAtMark names ${alertIdsAtMark.length} alerts for ` +
        `${rowsAtMark?.length ?? 0} rowsAtMark`,
    );
  }
  return parsed.data;
}

export function serializeCursorRecord(record: CursorRecord): Buffer {
  return Buffer.from(JSON.stringify(record), 'utf8');
}

/**
 * Most DLQ rows without a readable `updatedAt` remembered in a row (`rejectedAfterMark`, 67 bytes
 * each in the cursor record: ~670 kB). Such rows give the cursor no position: until a row with a
 * readable time comes, every resume below the mark serves them all again, and each must be
 * remembered or it would be rejected twice. Past this many the connector stops instead of
 * outgrowing the record (see admitRejected).
 */
export const MAX_REJECTED_AFTER_MARK = 10_000;

export interface ExportRequest {
  cursor?: string;
  updatedAfter?: string;
}

/** Mutable position used while pages are read; `snapshot()` is what gets committed. */
export class CursorTracker {
  #record: CursorRecord;
  /** Per alert published at the mark, the fingerprint of its latest version there. */
  #latest: Map<string, string>;
  /**
   * What a record written before `alertIdsAtMark` knew at the mark: fingerprints of every row
   * published there, alert unknown, or the event ids of one written before `rowsAtMark`.
   */
  #carried: Set<string>;
  #rejected: Set<string>;
  #rejectedAfterMark: Set<string>;
  #resumingBelowMark: boolean;

  constructor(record: CursorRecord) {
    this.#record = structuredClone(record);
    const rows = record.rowsAtMark ?? record.eventIdsAtMark;
    const alerts = record.alertIdsAtMark ?? [];
    this.#latest = new Map(alerts.map((alertId, i) => [alertId, rows[i] as string]));
    this.#carried = new Set(rows.slice(alerts.length));
    this.#rejected = new Set(record.rejectedAtMark);
    this.#rejectedAfterMark = new Set(record.rejectedAfterMark);
    // Without a cursor the next request is the resume below the mark.
    this.#resumingBelowMark =
      record.highWaterMark !== null && (record.cursor === null || (record.resumingBelowMark ?? true));
  }

  static initial(connector: string, exportStart: 'earliest' | Date): CursorTracker {
    return new CursorTracker({
      version: 1,
      connector,
      cursor: null,
      highWaterMark: null,
      highWaterMarkIso: null,
      eventIdsAtMark: [],
      rowsAtMark: [],
      rejectedAtMark: [],
      rejectedAfterMark: [],
      counters: { published: 0, rejected: 0, deduplicated: 0, pages: 0 },
      exportStart: exportStart === 'earliest' ? 'earliest' : exportStart.toISOString(),
      writtenAt: new Date(0).toISOString(),
    });
  }

  get highWaterMark(): number | null {
    return this.#record.highWaterMark;
  }

  get counters(): Readonly<CursorRecord['counters']> {
    return this.#record.counters;
  }

  /** The stored cursor, else `updatedAfter` just below the mark, else the configured first start. */
  nextRequest(): ExportRequest {
    const r = this.#record;
    if (r.cursor !== null) return { cursor: r.cursor };
    if (r.highWaterMark !== null) return { updatedAfter: new Date(r.highWaterMark - 1).toISOString() };
    return r.exportStart === 'earliest' ? {} : { updatedAfter: r.exportStart };
  }

  /**
   * True for a row in the millisecond just below the mark served by the resume request before any row
   * at the mark: already committed, so not admitted again. Resuming with `updatedAfter = mark - 1 ms`
   * serves such rows again when the upstream keeps sub-millisecond digits (`.001500` is after `.001`,
   * and truncates to mark - 1). The feed is in non-decreasing `updatedAt` order, so each came before
   * the row that set the mark and was committed with it or earlier. Anywhere else (a page read along
   * the cursor, or after a row at the mark) such a row is out of order, not served again: it is
   * admitted like any row below the mark. Known limit: a row first written into that millisecond
   * after the mark was read, and served before the mark's rows, is taken for one served again.
   */
  #justBelowMark(position: number): boolean {
    return this.#resumingBelowMark && position === (this.#record.highWaterMark as number) - 1;
  }

  /**
   * A row with a readable time: a later one moves the mark, and the rows of the old mark are
   * forgotten (resuming below the new mark never serves them again).
   */
  #moveMark(position: number): void {
    const mark = this.#record.highWaterMark;
    if (mark !== null && position < mark) return;
    this.#resumingBelowMark = false;
    if (mark === null || position > mark) {
      this.#record.highWaterMark = position;
      this.#latest.clear();
      this.#carried.clear();
      this.#rejected.clear();
    }
  }

  /**
   * A row at the mark that an older record knew, its alert not named there: served again. Asked only
   * for an alert with no version published since, so a change back to such a row after a newer one
   * is new. An event id came from a record written before rowsAtMark: the only match it allows.
   */
  #isCarried(eventId: string, fingerprint: string): boolean {
    // Almost always empty: checked first (hot path).
    if (this.#carried.size === 0) return false;
    return this.#carried.has(fingerprint) || this.#carried.has(eventId);
  }

  /**
   * A new row at the mark: the rejected rows without a readable time served since the last one sit
   * between the two in feed order, so possibly at this row's time, and are kept at its mark. Not for
   * a row served again: the resume serves the mark's rows before them, which says nothing of their
   * time, and handing them to this mark would forget them when the next row moves it to theirs.
   */
  #settleRejectedAfterMark(): void {
    // Almost always empty: checked first, as this runs for every new row (hot path).
    if (this.#rejectedAfterMark.size === 0) return;
    for (const fingerprint of this.#rejectedAfterMark) this.#rejected.add(fingerprint);
    this.#rejectedAfterMark.clear();
  }

  /**
   * True when an event is new and must be published; false when it is its alert's latest version
   * published at the mark (`fingerprint`, see rowFingerprintOf), served again. Two changes of one
   * alert at the same mark share an event id (the contract's formula, docs/contract.md), so the id alone would drop the
   * second one; and a change back to an earlier version (active, inactive, active again within the
   * millisecond) is new too: the feed serves each alert's current state, so a row served again is
   * always the latest version.
   */
  admitEvent(updatedAt: number, eventId: string, fingerprint: string, alertId: string): boolean {
    if (this.#justBelowMark(updatedAt)) {
      this.#record.counters.deduplicated++;
      return false;
    }
    this.#moveMark(updatedAt);
    if (updatedAt === this.#record.highWaterMark) {
      const latest = this.#latest.get(alertId);
      if (latest === fingerprint || (latest === undefined && this.#isCarried(eventId, fingerprint))) {
        this.#record.counters.deduplicated++;
        return false;
      }
      this.#latest.set(alertId, fingerprint);
      this.#settleRejectedAfterMark();
    }
    this.#record.counters.published++;
    return true;
  }

  /**
   * Same for a row bound for the DLQ. A row without a readable `updatedAt` sits, in feed order, at the
   * mark or after it, up to the next row with a readable time: it is remembered until the mark has
   * moved past that row's time (a bad row served again is not rejected twice). A new one
   * past MAX_REJECTED_AFTER_MARK in a row throws InvalidInputError (not retriable): the rows before
   * it are in the DLQ, it and the rest are not, and the cursor has not moved past them. No position
   * exists to move on to: guessing a time could skip rows, forgetting rows would send them
   * to the DLQ again on the next resume.
   */
  admitRejected(updatedAt: number | null, fingerprint: string): boolean {
    if (updatedAt === null) {
      if (this.#rejected.has(fingerprint) || this.#rejectedAfterMark.has(fingerprint)) {
        this.#record.counters.deduplicated++;
        return false;
      }
      if (this.#rejectedAfterMark.size >= MAX_REJECTED_AFTER_MARK) throw this.#unplaceable();
      this.#rejectedAfterMark.add(fingerprint);
    } else if (this.#justBelowMark(updatedAt)) {
      this.#record.counters.deduplicated++;
      return false;
    } else {
      this.#moveMark(updatedAt);
      if (updatedAt === this.#record.highWaterMark) {
        if (this.#rejected.has(fingerprint)) {
          this.#record.counters.deduplicated++;
          return false;
        }
        this.#rejected.add(fingerprint);
        this.#settleRejectedAfterMark();
      }
    }
    this.#record.counters.rejected++;
    return true;
  }

  #unplaceable(): InvalidInputError {
    return new InvalidInputError(
      'FEED_UPDATED_AT_UNREADABLE_RUN',
      `${MAX_REJECTED_AFTER_MARK} rows in a row without a readable updatedAt, sent to the DLQ, after ` +
        `the high-water mark ${new Date(this.#record.highWaterMark ?? 0).toISOString()}: without a time ` +
        'the cursor cannot move past them, and remembering more would outgrow the cursor record. ' +
        'Stopped before the next one; nothing is lost. Likely an upstream updatedAt format change: ' +
        'see the DLQ rows (ROW_UPDATED_AT_INVALID), then restart once the upstream serves readable ' +
        'times, or `connector reset --updated-after` past the rows',
    );
  }

  /** Records the page's `nextCursor`; null means caught up, and the next read resumes from the mark. */
  pageDone(nextCursor: string | null): void {
    this.#record.cursor = nextCursor;
    if (nextCursor === null) this.#resumingBelowMark = this.#record.highWaterMark !== null;
    this.#record.counters.pages++;
  }

  /**
   * Forgets a cursor the upstream refused: the next read is the resume below the mark (or, with no
   * mark yet, from the export start), which serves nothing twice.
   */
  dropCursor(): void {
    this.#record.cursor = null;
    this.#resumingBelowMark = this.#record.highWaterMark !== null;
  }

  snapshot(now: number = Date.now()): CursorRecord {
    const mark = this.#record.highWaterMark;
    return {
      ...structuredClone(this.#record),
      // Formatted here, once per commit, not on every mark move (hot path).
      highWaterMarkIso: mark === null ? null : new Date(mark).toISOString(),
      eventIdsAtMark: [],
      rowsAtMark: [...this.#latest.values(), ...this.#carried],
      alertIdsAtMark: [...this.#latest.keys()],
      rejectedAtMark: [...this.#rejected],
      rejectedAfterMark: [...this.#rejectedAfterMark],
      resumingBelowMark: this.#resumingBelowMark,
      writtenAt: new Date(now).toISOString(),
    };
  }
}
