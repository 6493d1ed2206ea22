import { AlertTable, type ExportRow } from './alerts.ts';
import { type Institution, MAX_TENANTS, makeIban, makeInstitutions } from './data.ts';
import { CursorCodec, Feed } from './feed.ts';
import { hash, prng, type Rand } from './prng.ts';

export const MALFORMED_KINDS = [
  'missing-id',
  'missing-iban',
  'invalid-iban',
  'bad-updated-at',
  'bad-is-active',
  'bad-reports-count',
] as const;
/**
 * Rows that break no field rule but cannot be published as they are: `too-deep` has a `qualification` of
 * arrays nested OVERSIZED_ROW_DEPTH levels deep, `too-large` carries a `bic` of
 * OVERSIZED_ROW_BYTES. Made on demand only, never by `malformedRowRate`.
 */
export const OVERSIZED_KINDS = ['too-deep', 'too-large'] as const;
export const OVERSIZED_ROW_DEPTH = 20_000;
export const OVERSIZED_ROW_BYTES = 5 * 1024 * 1024;
export type MalformedKind = (typeof MALFORMED_KINDS)[number] | (typeof OVERSIZED_KINDS)[number];
export const INJECTABLE_KINDS: readonly MalformedKind[] = [...MALFORMED_KINDS, ...OVERSIZED_KINDS];

export interface WorldOptions {
  apiKeys: readonly string[];
  alerts: number;
  seed: number;
  now: () => number;
}

const BACKLOG_SPAN_MS = 30 * 24 * 3600_000;
const MINUTE = 60_000;

/** Which institution wrote report `r` of alert `index`: derived, so reports need no storage. */
export function reportAuthor(seed: number, index: number, r: number, institutions: number): number {
  return hash(seed, index, r, 1) % institutions;
}

/** Minutes between the seeded reports of an alert; see details.ts. */
export function reportStepMs(seed: number, index: number): number {
  return (1 + (hash(seed, index, 7) % 180)) * MINUTE;
}

/**
 * The sandbox's data: institutions (tenants first), alerts as columns, the export feed of their
 * changes, and malformed rows. Everything follows from the seed: the backlog, and the sequence of
 * changes (their timing aside).
 */
export class World {
  readonly seed: number;
  readonly institutions: Institution[];
  readonly alerts: AlertTable;
  readonly feed: Feed;
  readonly cursors: CursorCodec;
  readonly #malformed: string[] = [];
  /** Malformed rows made so far of each kind: a kind's own values (bad counts) come in turn by it. */
  readonly #madeOfKind = new Map<MalformedKind, number>();
  readonly #tenants: Map<string, Institution>;
  readonly #rand: Rand;
  readonly #malformedRand: Rand;
  readonly #now: () => number;

  constructor(options: WorldOptions) {
    if (options.apiKeys.length > MAX_TENANTS) throw new RangeError(`at most ${MAX_TENANTS} API keys`);
    this.seed = options.seed;
    this.#rand = prng(options.seed);
    this.#malformedRand = prng(options.seed ^ 0x2545f491);
    this.#now = options.now;
    this.institutions = makeInstitutions(options.apiKeys, options.seed);
    this.#tenants = new Map(this.institutions.filter((i) => i.apiKey).map((i) => [i.apiKey as string, i]));
    this.alerts = new AlertTable(options.alerts);
    this.feed = new Feed((ref, seq) => ref < 0 || this.alerts.seq[ref] === seq);
    this.cursors = new CursorCodec();
    this.#seedBacklog(options.alerts);
  }

  /** The backlog spreads over 30 days; about a third of the alerts share a millisecond with the previous one. */
  #seedBacklog(count: number): void {
    const end = this.#now() - 1000;
    const start = end - BACKLOG_SPAN_MS;
    let at = start;
    for (let i = 0; i < count; i++) {
      if (i === 0 || this.#rand() >= 0.35)
        at = Math.max(at, start + Math.floor((i * BACKLOG_SPAN_MS) / count));
      const index = this.#newAlert(at);
      const r = this.#rand();
      this.alerts.qualification[index] = r < 0.4 ? 0 : r < 0.65 ? 3 : r < 0.9 ? 1 : 2;
      this.alerts.active[index] = this.#rand() < 0.08 ? 0 : 1;
      const reports = 1 + Math.floor(this.#rand() ** 2 * 6);
      for (let n = 1; n < reports; n++) this.#addReport(index);
      this.alerts.initialReports[index] = reports;
      this.alerts.sightings[index] = Math.floor(this.#rand() * reports * 2);
      this.alerts.falsePositives[index] = this.#rand() < 0.15 ? 1 + Math.floor(this.#rand() * 2) : 0;
      this.alerts.createdAt[index] = at - reports * reportStepMs(this.seed, index);
      this.#publish(index, at);
    }
  }

  /** A new alert with one report, held by a tenant half of the time. */
  #newAlert(at: number): number {
    const alerts = this.alerts;
    const index = alerts.add();
    const tenants = this.#tenants.size;
    const externals = this.institutions.length - tenants;
    const holder =
      this.#rand() < 0.5
        ? Math.floor(this.#rand() * tenants)
        : tenants + Math.floor(this.#rand() * externals);
    const institution = this.institutions[holder] as Institution;
    alerts.holder[index] = holder;
    alerts.iban[index] = makeIban(institution.country, institution.bic.slice(0, 4), this.#rand);
    alerts.qualification[index] = 0;
    alerts.active[index] = 1;
    alerts.createdAt[index] = at;
    alerts.initialReports[index] = 1;
    alerts.reports[index] = 0;
    alerts.authorMask[index] = 0;
    this.#addReport(index);
    return index;
  }

  #addReport(index: number): void {
    const alerts = this.alerts;
    const r = alerts.reports[index] as number;
    const author = reportAuthor(this.seed, index, r, this.institutions.length);
    alerts.authorMask[index] = ((alerts.authorMask[index] as number) | (1 << author)) >>> 0;
    alerts.reports[index] = r + 1;
  }

  /** Gives the alert a new feed entry at `at`; its previous one goes dead. */
  #publish(index: number, at: number): void {
    const superseded = (this.alerts.seq[index] as number) > 0;
    this.alerts.seq[index] = this.feed.append(index, at);
    this.alerts.updatedAt[index] = this.feed.lastAt;
    if (superseded) this.feed.superseded();
  }

  tenantOf(apiKey: string): Institution | undefined {
    return this.#tenants.get(apiKey);
  }

  /**
   * Applies `count` random changes that share one millisecond: new alerts, new reports,
   * qualification changes, deactivations and reactivations. With `malformedRate`, a change may also
   * put a malformed row right after its own entry.
   */
  applyChanges(count: number, malformedRate = 0): void {
    const at = Math.max(this.#now(), this.feed.lastAt);
    for (let n = 0; n < count; n++) {
      const index = this.#change(at);
      if (malformedRate > 0 && this.#malformedRand() < malformedRate) this.#appendMalformed(index, at);
    }
  }

  #change(at: number): number {
    const alerts = this.alerts;
    const roll = this.#rand();
    if (roll < 0.15 || alerts.length === 0) {
      const index = this.#newAlert(at);
      this.#publish(index, at);
      return index;
    }
    const index = Math.floor(this.#rand() * alerts.length);
    if (roll < 0.5) {
      this.#addReport(index);
      alerts.lastReportAt[index] = at;
      const kind = this.#rand();
      if (kind < 0.3) alerts.sightings[index] = (alerts.sightings[index] as number) + 1;
      else if (kind < 0.4) alerts.falsePositives[index] = (alerts.falsePositives[index] as number) + 1;
    } else if (roll < 0.75) {
      const q = alerts.qualification[index] as number;
      alerts.qualification[index] = (q + 1 + Math.floor(this.#rand() * 3)) % 4;
    } else {
      alerts.active[index] = alerts.active[index] === 1 ? 0 : 1;
    }
    this.#publish(index, at);
    return index;
  }

  /** The feed's JSON of an entry: an alert's current row, or a malformed row. */
  rowJson(ref: number): string {
    return ref >= 0 ? this.alerts.rowJson(ref, this.institutions) : (this.#malformed[-ref - 1] as string);
  }

  /** Appends a row breaking one SPEC §4 rule, cycling through them unless `kind` is given. */
  injectMalformed(kind?: MalformedKind): MalformedKind {
    const at = Math.max(this.#now(), this.feed.lastAt);
    return this.#appendMalformed(undefined, at, kind);
  }

  #appendMalformed(index: number | undefined, at: number, kind?: MalformedKind): MalformedKind {
    const n = this.#malformed.length;
    const chosen = kind ?? (MALFORMED_KINDS[n % MALFORMED_KINDS.length] as MalformedKind);
    const turn = this.#madeOfKind.get(chosen) ?? 0;
    this.#madeOfKind.set(chosen, turn + 1);
    this.#malformed.push(malformedRowJson(chosen, turn, this.#malformedBase(index, n), at));
    this.feed.append(-n - 1, at);
    return chosen;
  }

  /** A malformed row copies the changed alert's row (or a fixed one) under an id of its own. */
  #malformedBase(index: number | undefined, n: number): Record<string, unknown> {
    if (index !== undefined) {
      return { ...(JSON.parse(this.alerts.rowJson(index, this.institutions)) as object), id: `BAD-${n + 1}` };
    }
    return {
      id: `BAD-${n + 1}`,
      iban: makeIban('DE', '', prng(this.seed + n)),
      bic: this.institutions[0]?.bic ?? null,
      qualification: 'PENDING',
      reportsCount: 1,
      isActive: true,
    };
  }

  /** The current row of every alert, in feed order: what a consumer's table must end up equal to. */
  currentRows(): ExportRow[] {
    return this.feed
      .liveRefs()
      .filter((ref) => ref >= 0)
      .map((ref) => JSON.parse(this.alerts.rowJson(ref, this.institutions)) as ExportRow);
  }
}

/** Row number `turn` of its kind, breaking that kind's rule. */
function malformedRow(
  kind: MalformedKind,
  turn: number,
  base: Record<string, unknown>,
  at: number,
): Record<string, unknown> {
  const row: Record<string, unknown> = { ...base, updatedAt: new Date(at).toISOString() };
  if (kind === 'missing-id') delete row.id;
  if (kind === 'missing-iban') delete row.iban;
  if (kind === 'invalid-iban') {
    // Another check digit: the mod-97 check then fails.
    const iban = String(row.iban);
    const check = Number(iban.slice(2, 4));
    row.iban = `${iban.slice(0, 2)}${String(check === 98 ? 97 : check + 1).padStart(2, '0')}${iban.slice(4)}`;
  }
  if (kind === 'bad-updated-at') row.updatedAt = 'yesterday';
  if (kind === 'bad-is-active') row.isActive = 'yes';
  if (kind === 'bad-reports-count') row.reportsCount = [-1, 3.5, 2 ** 31][turn % 3];
  if (kind === 'too-large') row.bic = 'X'.repeat(OVERSIZED_ROW_BYTES);
  return row;
}

/** The feed's JSON of a malformed row; a `too-deep` one written as text (JSON.stringify would overflow). */
function malformedRowJson(
  kind: MalformedKind,
  turn: number,
  base: Record<string, unknown>,
  at: number,
): string {
  const row = malformedRow(kind, turn, base, at);
  if (kind !== 'too-deep') return JSON.stringify(row);
  const depth = OVERSIZED_ROW_DEPTH;
  const { qualification: _, ...rest } = row;
  return `${JSON.stringify(rest).slice(0, -1)},"qualification":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}
