import { grown } from './columns.ts';
import type { Institution } from './data.ts';

export const QUALIFICATIONS = ['PENDING', 'CONFIRMED', 'REJECTED', 'UNDER_INVESTIGATION'] as const;
export type Qualification = (typeof QUALIFICATIONS)[number];

/** An export row: exactly the seven fields of the service interface. */
export interface ExportRow {
  id: string | number;
  iban: string;
  bic: string;
  qualification: string;
  reportsCount: number;
  updatedAt: string | number;
  isActive: boolean;
}

// The contract allows ids as numbers and updatedAt as epoch ms; a fixed share of alerts use each form,
// always the same alerts, so clients meet both.
const NUMERIC_ID_BASE = 100_000;
const ZEROS = '00000000';
export const hasNumericId = (index: number) => index % 7 === 3;
export const hasEpochUpdatedAt = (index: number) => index % 11 === 5;

export function alertIdOf(index: number): string | number {
  if (hasNumericId(index)) return NUMERIC_ID_BASE + index;
  const n = String(index + 1);
  return n.length >= 8 ? `ALR-${n}` : `ALR-${ZEROS.slice(n.length)}${n}`;
}

/**
 * The index of the alert with this id (as text, the way it arrives in a path), if any. Only the id
 * as served names the alert: `ALR-000000001` (a zero more) or the other form is no alias of it.
 */
export function alertIndexOf(id: string, length: number): number | undefined {
  const text = /^ALR-(\d+)$/.exec(id);
  const index = text ? Number(text[1]) - 1 : /^\d+$/.test(id) ? Number(id) - NUMERIC_ID_BASE : -1;
  if (!Number.isSafeInteger(index) || index < 0 || index >= length) return undefined;
  return String(alertIdOf(index)) === id ? index : undefined;
}

const DAY = 86_400_000;
const TWO = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));
const THREE = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));

/**
 * Every alert as columns of typed arrays rather than one object each: a million alerts then cost
 * tens of megabytes and seed in about a second. Reports, notes and comments are derived from the
 * seed and the counts (see details.ts), so nothing else is stored.
 */
export class AlertTable {
  length = 0;
  iban: string[] = [];
  holder = new Uint8Array(0);
  qualification = new Uint8Array(0);
  active = new Uint8Array(0);
  initialReports = new Uint8Array(0);
  reports = new Int32Array(0);
  sightings = new Int32Array(0);
  falsePositives = new Int32Array(0);
  /** Bit n set when institution n wrote at least one of the alert's reports. */
  authorMask = new Uint32Array(0);
  createdAt = new Float64Array(0);
  updatedAt = new Float64Array(0);
  /** When a change last added a report (0 when none did): bounds the derived report times. */
  lastReportAt = new Float64Array(0);
  /** Sequence number of the alert's live feed entry. */
  seq = new Float64Array(0);
  // The date part of the last day formatted: feed rows come in time order, so most rows reuse it.
  #isoDay = Number.NaN;
  #isoPrefix = '';

  constructor(capacity: number) {
    this.#resize(Math.max(16, capacity));
  }

  /** Room for one more alert; answers its index. */
  add(): number {
    if (this.length === this.seq.length) this.#resize(this.length * 2);
    return this.length++;
  }

  #resize(capacity: number): void {
    this.holder = grown(this.holder, capacity);
    this.qualification = grown(this.qualification, capacity);
    this.active = grown(this.active, capacity);
    this.initialReports = grown(this.initialReports, capacity);
    this.reports = grown(this.reports, capacity);
    this.sightings = grown(this.sightings, capacity);
    this.falsePositives = grown(this.falsePositives, capacity);
    this.authorMask = grown(this.authorMask, capacity);
    this.createdAt = grown(this.createdAt, capacity);
    this.updatedAt = grown(this.updatedAt, capacity);
    this.lastReportAt = grown(this.lastReportAt, capacity);
    this.seq = grown(this.seq, capacity);
  }

  qualificationOf(index: number): Qualification {
    return QUALIFICATIONS[this.qualification[index] ?? 0] ?? 'PENDING';
  }

  /** ISO-8601 with milliseconds, as Date#toISOString, at a fraction of its cost (one Date per day). */
  iso(ms: number): string {
    const day = Math.floor(ms / DAY);
    if (day !== this.#isoDay) {
      this.#isoDay = day;
      this.#isoPrefix = new Date(day * DAY).toISOString().slice(0, 11);
    }
    let rest = ms - day * DAY;
    const h = Math.floor(rest / 3_600_000);
    rest -= h * 3_600_000;
    const m = Math.floor(rest / 60_000);
    rest -= m * 60_000;
    const sec = Math.floor(rest / 1000);
    return `${this.#isoPrefix}${TWO[h]}:${TWO[m]}:${TWO[sec]}.${THREE[rest - sec * 1000]}Z`;
  }

  /**
   * The alert's export row as JSON, built by hand: every value is a number, a boolean or a string
   * of letters and digits, so nothing needs escaping, and it is several times faster than
   * JSON.stringify, which matters for a feed served at 100,000+ rows/s.
   */
  rowJson(index: number, institutions: readonly Institution[]): string {
    const id = hasNumericId(index) ? alertIdOf(index) : `"${alertIdOf(index)}"`;
    const at = this.updatedAt[index] ?? 0;
    const updatedAt = hasEpochUpdatedAt(index) ? at : `"${this.iso(at)}"`;
    const bic = institutions[this.holder[index] ?? 0]?.bic ?? '';
    return `{"id":${id},"iban":"${this.iban[index]}","bic":"${bic}","qualification":"${this.qualificationOf(index)}","reportsCount":${this.reports[index]},"updatedAt":${updatedAt},"isActive":${this.active[index] === 1}}`;
  }
}
