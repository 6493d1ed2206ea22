import {
  type Alert,
  exportRowJson,
  holderNameFor,
  type Institution,
  makeAlert,
  makeInstitutions,
  prng,
  QUALIFICATIONS,
} from './data.ts';
import { Feed } from './feed.ts';

export const MALFORMED_KINDS = [
  'missing-id',
  'missing-iban',
  'invalid-iban',
  'bad-updated-at',
  'bad-is-active',
  'bad-reports-count',
] as const;
export type MalformedKind = (typeof MALFORMED_KINDS)[number];

/** The sandbox's data: institutions, alerts, and the export feed of their changes. */
export class World {
  readonly institutions: Institution[];
  readonly alerts: Alert[] = [];
  readonly feed = new Feed();
  readonly #rand: () => number;
  readonly #now: () => number;
  #malformed = 0;

  constructor(options: { apiKeys: string[]; alerts: number; seed: number; now: () => number }) {
    this.#rand = prng(options.seed);
    this.#now = options.now;
    this.institutions = makeInstitutions(options.apiKeys, this.#rand);
    // Seeded history over the past hours; several alerts share each millisecond, as real feeds do.
    const end = options.now() - 1000;
    let at = end - options.alerts * 5;
    for (let i = 0; i < options.alerts; i++) {
      if (this.#rand() < 0.4) at += 1 + Math.floor(this.#rand() * 9);
      const alert = makeAlert(i, this.#rand, this.institutions, Math.min(at, end));
      this.alerts.push(alert);
      this.feed.append(alert.index, alert.updatedAt, exportRowJson(alert));
    }
  }

  tenantOf(apiKey: string): Institution | undefined {
    return this.institutions.find((i) => i.apiKey === apiKey);
  }

  holderName(iban: string): string {
    return holderNameFor(iban);
  }

  /** Applies `count` changes that share one millisecond; some also emit a malformed row. */
  applyChanges(count: number, malformedRate = 0): void {
    const at = this.#now();
    for (let n = 0; n < count; n++) {
      const roll = this.#rand();
      if (roll < 0.1 || this.alerts.length === 0) {
        const alert = makeAlert(this.alerts.length, this.#rand, this.institutions, at);
        alert.isActive = true;
        this.alerts.push(alert);
        this.#publish(alert, at);
      } else {
        const alert = this.alerts[Math.floor(this.#rand() * this.alerts.length)] as Alert;
        if (roll < 0.5) {
          alert.reportsCount++;
          alert.sightingsCount++;
        } else if (roll < 0.75) {
          alert.qualification = QUALIFICATIONS[Math.floor(this.#rand() * QUALIFICATIONS.length)] ?? 'PENDING';
        } else {
          alert.isActive = !alert.isActive;
        }
        this.#publish(alert, at);
      }
      if (malformedRate > 0 && this.#rand() < malformedRate) this.injectMalformed(undefined, at);
    }
  }

  #publish(alert: Alert, at: number): void {
    alert.updatedAt = Math.max(at, this.feed.lastUpdatedAt);
    this.feed.append(alert.index, alert.updatedAt, exportRowJson(alert));
  }

  /** Appends a row that breaks one SPEC §4 rule (cycling through them unless `kind` is given). */
  injectMalformed(kind?: MalformedKind, at = this.#now()): MalformedKind {
    const chosen = kind ?? (MALFORMED_KINDS[this.#malformed % MALFORMED_KINDS.length] as MalformedKind);
    this.#malformed++;
    const updatedAt = new Date(Math.max(at, this.feed.lastUpdatedAt)).toISOString();
    const row: Record<string, unknown> = {
      id: `BAD-${this.#malformed}`,
      iban: 'DE89370400440532013000',
      bic: 'COBADEFFXXX',
      qualification: 'PENDING',
      reportsCount: 1,
      updatedAt,
      isActive: true,
    };
    if (chosen === 'missing-id') delete row.id;
    if (chosen === 'missing-iban') delete row.iban;
    if (chosen === 'invalid-iban') row.iban = 'DE88370400440532013000';
    if (chosen === 'bad-updated-at') row.updatedAt = 'yesterday';
    if (chosen === 'bad-is-active') row.isActive = 'yes';
    if (chosen === 'bad-reports-count') row.reportsCount = [-1, 3.5, 2 ** 31][this.#malformed % 3];
    this.feed.append(-1, Math.max(at, this.feed.lastUpdatedAt), JSON.stringify(row));
    return chosen;
  }

  /** The current export row of every alert: what a consumer's table must equal. */
  currentRows(): Record<string, unknown>[] {
    return this.alerts.map((a) => JSON.parse(exportRowJson(a)) as Record<string, unknown>);
  }
}
