/** The updatedAt of every row exportRow makes, unless overridden. */
export const EXPORT_ROW_UPDATED_AT = '2026-11-22T09:30:00.000Z';

/** A valid export row of alert `id`, with `over` replacing any of its fields. */
export function exportRow(id: string, over: Record<string, unknown> = {}) {
  return {
    id,
    iban: 'DE89 3704 0044 0532 0130 00',
    bic: null,
    qualification: 'PENDING',
    reportsCount: 1,
    updatedAt: EXPORT_ROW_UPDATED_AT,
    isActive: true,
    ...over,
  };
}
