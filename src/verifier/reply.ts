import { DecodeError } from '../errors.ts';
import { clip } from '../logger.ts';

/** The longest error message a reply carries, in characters. */
export const MAX_REPLY_ERROR_MESSAGE = 512;

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
    // Bounded, as everything in a reply is: an upstream's or a decoder's message may be long.
    error: { code: error.code, message: clip(error.message, MAX_REPLY_ERROR_MESSAGE) },
    respondedAt,
    upstreamLatencyMs: upstreamLatencyMs === null ? null : Math.min(upstreamLatencyMs, 2 ** 31 - 1),
  };
}

/** JSON replies use the Avro field names, enums as strings, unions plain and instants as epoch ms. */
export function toJson(result: VerificationResult): Buffer {
  return Buffer.from(JSON.stringify(result), 'utf8');
}

const OUTCOMES: ReadonlySet<unknown> = new Set<Outcome>([
  'COMPLETED',
  'INVALID_REQUEST',
  'EXPIRED',
  'FAILED',
]);

/** A decoded reply (`what` names it in the error): DecodeError unless it has a requestId and an outcome. */
export function asVerificationResult(value: unknown, what: string): VerificationResult {
  const reply = value as Partial<Record<keyof VerificationResult, unknown>> | null;
  if (typeof reply !== 'object' || reply === null || typeof reply.requestId !== 'string') {
    throw new DecodeError(`${what} is not a VerificationResult: no requestId`);
  }
  if (!OUTCOMES.has(reply.outcome)) {
    throw new DecodeError(`${what} is not a VerificationResult: outcome ${JSON.stringify(reply.outcome)}`);
  }
  return value as VerificationResult;
}

/** A JSON reply's value: DecodeError when it is not JSON, or not a VerificationResult. */
export function fromJson(value: Buffer | null, what: string): VerificationResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value?.toString('utf8') ?? '');
  } catch (err) {
    throw new DecodeError(`${what} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  return asVerificationResult(parsed, what);
}
