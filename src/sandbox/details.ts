import { alertIdOf } from './alerts.ts';
import { holderNameFor, type Institution } from './data.ts';
import { hash } from './prng.ts';
import { reportAuthor, reportStepMs, type World } from './world.ts';

export interface Report {
  id: string;
  /** Id of the institution that sent the report. */
  author: string;
  authorName: string;
  reportedAt: string;
  channel: string;
  amount: number;
  currency: 'EUR';
  markedForDeletion: boolean;
}

const CHANNELS = ['SEPA_CREDIT_TRANSFER', 'SEPA_INSTANT', 'CARD', 'DIRECT_DEBIT'];
const HOLDER_NOTES = [
  'account holder confirms the payee is genuine',
  'customer reports the account was opened with stolen identity documents',
  'account frozen pending investigation',
  'funds returned to the payer',
];
const OBSERVATIONS = [
  'seen as beneficiary of several instant transfers within minutes',
  'payer contacted by phone by a fake bank adviser',
  'beneficiary name differs from the account holder',
  'linked to a marketplace scam',
];
const COMMENTS = [
  'please confirm the qualification',
  'second complaint this week',
  'duplicate of an earlier report',
];

const iso = (ms: number) => new Date(ms).toISOString();

/** The fields searches show for an alert (updatedAt always ISO-8601 here). */
export function summaryOf(world: World, index: number): Record<string, unknown> {
  const a = world.alerts;
  return {
    id: alertIdOf(index),
    iban: a.iban[index],
    bic: world.institutions[a.holder[index] ?? 0]?.bic,
    qualification: a.qualificationOf(index),
    reportsCount: a.reports[index],
    sightingsCount: a.sightings[index],
    falsePositivesCount: a.falsePositives[index],
    createdAt: iso(a.createdAt[index] ?? 0),
    updatedAt: iso(a.updatedAt[index] ?? 0),
    isActive: a.active[index] === 1,
  };
}

/**
 * An alert's reports, derived from the seed and its count. Seeded reports are `step` apart from the
 * alert's creation; reports added by changes spread evenly up to the last one's time, so memory stays
 * one number per alert however many changes arrive.
 */
export function reportsOf(world: World, index: number): Report[] {
  const a = world.alerts;
  const id = alertIdOf(index);
  const initial = a.initialReports[index] ?? 1;
  const count = a.reports[index] ?? 0;
  const step = reportStepMs(world.seed, index);
  const lastSeeded = (a.createdAt[index] ?? 0) + (initial - 1) * step;
  const addedSpan = (a.lastReportAt[index] ?? 0) - lastSeeded;
  const reports: Report[] = [];
  for (let r = 0; r < count; r++) {
    const author = world.institutions[
      reportAuthor(world.seed, index, r, world.institutions.length)
    ] as Institution;
    const h = hash(world.seed, index, r, 2);
    const at =
      r < initial
        ? (a.createdAt[index] ?? 0) + r * step
        : lastSeeded + Math.round((addedSpan * (r - initial + 1)) / (count - initial));
    reports.push({
      id: `${id}-R${r + 1}`,
      author: author.id,
      authorName: author.name,
      reportedAt: iso(at),
      channel: CHANNELS[h % CHANNELS.length] as string,
      amount: (h % 500_000) / 100,
      currency: 'EUR',
      markedForDeletion: h % 17 === 0,
    });
  }
  return reports;
}

function derivedList<T>(seedHash: number, count: number, make: (k: number, h: number) => T): T[] {
  return Array.from({ length: count }, (_, k) => make(k, hash(seedHash, k, 3)));
}

/** The full alert of GET /sharing/v1/alerts/{alertId}. */
export function fullAlertOf(world: World, index: number): Record<string, unknown> {
  const a = world.alerts;
  const h = hash(world.seed, index, 4);
  const created = a.createdAt[index] ?? 0;
  // Notes and comments fall between creation and the last update.
  const between = (k: number, stepMs: number) =>
    iso(Math.min(created + (k + 1) * stepMs, a.updatedAt[index] ?? 0));
  const holder = world.institutions[a.holder[index] ?? 0] as Institution;
  const iban = a.iban[index] as string;
  return {
    ...summaryOf(world, index),
    holder: { institution: holder.id, institutionName: holder.name, name: holderNameFor(iban) },
    reports: reportsOf(world, index),
    qualificationNotes: derivedList(h, h % 3, (k, kh) => ({
      author: holder.id,
      note: HOLDER_NOTES[(h + kh) % HOLDER_NOTES.length],
      addedAt: between(k, 3_600_000),
    })),
    participantObservations: derivedList(h + 1, (h >>> 4) % 3, (k, kh) => ({
      participant: world.institutions[(h + kh) % world.institutions.length]?.id,
      observation: OBSERVATIONS[(h + k) % OBSERVATIONS.length],
      observedAt: between(k, 5_400_000),
    })),
    comments: derivedList(h + 2, (h >>> 8) % 4, (k, kh) => ({
      author: world.institutions[(kh + k) % world.institutions.length]?.id,
      text: COMMENTS[(h + k) % COMMENTS.length],
      createdAt: between(k, 7_200_000),
    })),
  };
}
