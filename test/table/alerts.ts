import type { AlertState } from '../../src/alert-events.ts';

/** The n-th state of `iban`'s alert, for unit tests of the table's pure parts. */
export const alertState = (iban: string, n: number): AlertState => ({
  eventId: `e${n}`,
  alertId: `a-${iban}`,
  iban,
  bic: null,
  qualification: 'CONFIRMED',
  qualificationRaw: null,
  reportsCount: n,
  updatedAt: 1000 + n,
  observedAt: 2000 + n,
});
