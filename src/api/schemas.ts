import { z } from 'zod';
import type { ExportPage, FullAlert, SearchPage, SentAlertSummary, VerifyResult } from './types.ts';

/**
 * Response shapes, parsed tolerantly: unknown fields pass through untouched, the fields a caller
 * relies on are enforced. docs/contract.md lists the choices made where the service interface is silent.
 */

const alertId = z.union([z.string().min(1), z.number()]);
const count = z.number().int().min(0);

export const verifyResultSchema = z.looseObject({
  partyNameMatch: z.enum(['MTCH', 'CMTC', 'NMTC', 'NOAP']),
  // Some services send `null` rather than leaving the field out.
  matchedName: z
    .string()
    .nullish()
    .transform((v) => v ?? undefined),
});

/** Documented alert fields are typed when present; only `id` is required, an unknown qualification is kept. */
const alertSummarySchema = z.looseObject({
  id: alertId,
  iban: z.string().optional(),
  bic: z.string().nullable().optional(),
  qualification: z.string().optional(),
  reportsCount: z.number().optional(),
  updatedAt: z.union([z.string(), z.number()]).optional(),
  isActive: z.boolean().optional(),
});

const sentAlertSummarySchema = alertSummarySchema.extend({
  myReports: z.array(z.unknown()).optional(),
  otherReports: z.array(z.unknown()).optional(),
});

const searchPage = <A extends z.ZodType>(alert: A) =>
  z.looseObject({
    page: count,
    totalPages: count,
    totalAlerts: count,
    alerts: z.array(alert),
  });

export const receivedSearchSchema = searchPage(alertSummarySchema);
export const sentSearchSchema = searchPage(sentAlertSummarySchema);
export const fullAlertSchema = z.looseObject({ id: alertId });

// The inferred types must stay assignable to the public ones.
type Check<T, _U extends T> = true;
export type SchemaChecks = [
  Check<VerifyResult, z.output<typeof verifyResultSchema>>,
  Check<SearchPage<SentAlertSummary>, z.output<typeof sentSearchSchema>>,
  Check<FullAlert, z.output<typeof fullAlertSchema>>,
];

/**
 * The export envelope, checked by hand: this is the connector's hot path, and rows are NOT looked
 * into (the connector validates each row and sends bad ones to its DLQ). Returns a reason on failure.
 */
export function checkExportEnvelope(
  value: unknown,
): { ok: true; page: ExportPage } | { ok: false; reason: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: 'the body is not a JSON object' };
  }
  const { rows, nextCursor } = value as { rows?: unknown; nextCursor?: unknown };
  if (!Array.isArray(rows)) return { ok: false, reason: '"rows" is not an array' };
  if (nextCursor !== undefined && nextCursor !== null && typeof nextCursor !== 'string') {
    return { ok: false, reason: '"nextCursor" is neither a string nor null' };
  }
  // An empty string cursor could not be told apart from "no cursor" when sent back: treat it as caught up.
  return {
    ok: true,
    page: { rows, nextCursor: nextCursor === undefined || nextCursor === '' ? null : nextCursor },
  };
}
