import type { Batch, PreparedEvent } from './connector.ts';
import type { CursorRecord, CursorTracker } from './cursor.ts';
import {
  eventValue,
  KIND_REJECTED,
  kindTypes,
  type PreparedPage,
  type PreparedRejection,
} from './prepare.ts';
import type { EventType } from './rows.ts';

/** When a transaction is due: CONNECTOR_TX_MAX_ROWS and CONNECTOR_TX_MAX_MS. */
export interface TransactionLimits {
  txMaxRows: number;
  txMaxMs: number;
}

/**
 * The rows read since the last commit, bound for one Kafka transaction: the events and the DLQ rows,
 * when it started, and whether a page in it still waits to be vouched for.
 */
export class OpenTransaction {
  readonly #limits: TransactionLimits;
  readonly #now: () => number;
  #events: PreparedEvent[] = [];
  #rejected: PreparedRejection[] = [];
  #startedAt: number;
  #holdsCursorPage = false;
  #unvouched = false;

  constructor(limits: TransactionLimits, now: () => number) {
    this.#limits = limits;
    this.#now = now;
    this.#startedAt = now();
  }

  /** Events and DLQ rows held. */
  get rows(): number {
    return this.#events.length + this.#rejected.length;
  }

  /** True once a page read with a cursor is held. */
  get holdsCursorPage(): boolean {
    return this.#holdsCursorPage;
  }

  /**
   * Appends the rows of `page` that `tracker` has not seen yet; returns how many it had seen (served
   * again, deduplicated). A row the tracker refuses with an error ends the page there.
   */
  admit(page: PreparedPage, tracker: CursorTracker): number {
    const seen = tracker.counters.deduplicated;
    const { kinds, updatedAt, eventIds, rowFingerprints, alertIds, keys } = page;
    let e = 0;
    let r = 0;
    for (let i = 0; i < kinds.length; i++) {
      const kind = kinds[i] as number;
      if (kind === KIND_REJECTED) {
        const row = page.rejected[r++] as PreparedRejection;
        if (tracker.admitRejected(row.updatedAt, row.fingerprint)) this.#rejected.push(row);
        continue;
      }
      const eventId = eventIds[e] as string;
      const alertId = alertIds[e] as string;
      const at = updatedAt[e] as number;
      if (tracker.admitEvent(at, eventId, rowFingerprints[e] as string, alertId)) {
        this.#events.push({
          type: kindTypes[kind] as EventType,
          key: keys[e] as string,
          value: eventValue(page, e),
          eventId,
          alertId,
          updatedAt: at,
        });
      }
      e++;
    }
    return tracker.counters.deduplicated - seen;
  }

  /**
   * Notes that the page just admitted answered a cursor, and whether ExportCursorCheck vouched for
   * it. A page it could not vouch for (the first answering a cursor after a restart, or after a page
   * read without one) keeps the transaction from being committed before the next page has shown
   * that the upstream reads the cursor, or the feed is caught up. Else an upstream ignoring the
   * cursor had the feed's first page, its rows taken for late ones, committed again at every
   * restart, with a fresh cursor that reads on from a wrong place. A page vouched for vouches for
   * the one before it too.
   */
  heldCursorPage(vouched: boolean): void {
    this.#holdsCursorPage = true;
    this.#unvouched = !vouched;
  }

  /**
   * When the transaction is to be committed even if the next page has not come (CONNECTOR_TX_MAX_MS
   * after it started); undefined while it is empty or waits for a page to be vouched for.
   */
  commitDeadline(): number | undefined {
    if (this.rows === 0 || this.#unvouched) return undefined;
    return this.#startedAt + this.#limits.txMaxMs;
  }

  /** True when a page has been taken in that closes it: caught up, or full, or old enough. */
  isDue(caughtUp: boolean): boolean {
    if (caughtUp) return true;
    if (this.#unvouched) return false;
    return this.rows >= this.#limits.txMaxRows || this.#now() - this.#startedAt >= this.#limits.txMaxMs;
  }

  /** What the transaction commits, with `cursor`; it starts again empty. */
  take(cursor: CursorRecord): Batch {
    const batch: Batch = { events: this.#events, rejected: this.#rejected, cursor };
    this.#events = [];
    this.#rejected = [];
    this.#startedAt = this.#now();
    this.#holdsCursorPage = false;
    this.#unvouched = false;
    return batch;
  }
}
