export type Outcome = 'COMPLETED' | 'INVALID_REQUEST' | 'EXPIRED' | 'FAILED';
export type NameMatch = 'MTCH' | 'CMTC' | 'NMTC' | 'NOAP';

/** The Avro value of `fraudlink.vop.VerificationResult`; also its JSON form, as it stands. */
export interface VerificationResult {
  requestId: string;
  outcome: Outcome;
  nameMatch: NameMatch | null;
  matchedName: string | null;
  error: { code: string; message: string } | null;
  respondedAt: number;
  upstreamLatencyMs: number | null;
}

export function completed(
  requestId: string,
  answer: { partyNameMatch: NameMatch; matchedName?: string | null },
  respondedAt: number,
  upstreamLatencyMs: number,
): VerificationResult {
  return {
    requestId,
    outcome: 'COMPLETED',
    nameMatch: answer.partyNameMatch,
    matchedName: answer.partyNameMatch === 'CMTC' ? (answer.matchedName ?? null) : null,
    error: null,
    respondedAt,
    upstreamLatencyMs: Math.min(upstreamLatencyMs, 2 ** 31 - 1),
  };
}

export function failed(
  requestId: string,
  outcome: Exclude<Outcome, 'COMPLETED'>,
  error: { code: string; message: string },
  respondedAt: number,
  upstreamLatencyMs: number | null = null,
): VerificationResult {
  return {
    requestId,
    outcome,
    nameMatch: null,
    matchedName: null,
    error,
    respondedAt,
    upstreamLatencyMs: upstreamLatencyMs === null ? null : Math.min(upstreamLatencyMs, 2 ** 31 - 1),
  };
}

/** JSON replies use the Avro field names, enums as strings, unions plain and instants as epoch ms. */
export function toJson(result: VerificationResult): Buffer {
  return Buffer.from(JSON.stringify(result), 'utf8');
}
