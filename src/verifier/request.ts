import { isValidNormalizedIban, normalizeIban } from '../iban.ts';
import { parseInstant } from '../instant.ts';

export interface VerificationRequest {
  requestId: string;
  iban: string;
  partyName: string;
  requestedAt: number;
}

export type RequestFormat = 'avro' | 'json';

/** Stable codes carried in INVALID_REQUEST replies and DLQ `error-code` headers. */
export const RequestErrorCodes = {
  UNREADABLE: 'REQUEST_UNREADABLE',
  BATCH_UNREADABLE: 'REQUEST_BATCH_UNREADABLE',
  REQUEST_ID_MISSING: 'REQUEST_ID_MISSING',
  IBAN_INVALID: 'REQUEST_IBAN_INVALID',
  NAME_INVALID: 'REQUEST_NAME_INVALID',
  REQUESTED_AT_INVALID: 'REQUEST_REQUESTED_AT_INVALID',
  DEADLINE_INVALID: 'REQUEST_DEADLINE_INVALID',
} as const;

export type RequestErrorCode = (typeof RequestErrorCodes)[keyof typeof RequestErrorCodes];

export const MAX_PARTY_NAME = 140;

export type Validated =
  | { ok: true; request: VerificationRequest }
  | { ok: false; code: RequestErrorCode; message: string };

/** Parses a JSON request body; instants may be epoch ms or ISO-8601 strings. */
export function parseJsonRequest(
  value: Buffer,
): Validated | { ok: false; code: 'REQUEST_UNREADABLE'; message: string; unreadable: true } {
  let body: unknown;
  try {
    body = JSON.parse(value.toString('utf8'));
  } catch {
    return {
      ok: false,
      code: RequestErrorCodes.UNREADABLE,
      message: 'value is not valid JSON',
      unreadable: true,
    };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return {
      ok: false,
      code: RequestErrorCodes.UNREADABLE,
      message: 'value is not a JSON object',
      unreadable: true,
    };
  }
  return validateRequest(body as Record<string, unknown>);
}

/** Validates a decoded request at the edge (SPEC §5; the name limit of 140 characters). */
export function validateRequest(body: Record<string, unknown>): Validated {
  const { requestId, iban, partyName } = body;
  if (typeof requestId !== 'string' || requestId.trim() === '') {
    return { ok: false, code: RequestErrorCodes.REQUEST_ID_MISSING, message: 'requestId is missing' };
  }
  if (typeof iban !== 'string' || !isValidNormalizedIban(normalizeIban(iban))) {
    return {
      ok: false,
      code: RequestErrorCodes.IBAN_INVALID,
      message: 'iban is not a valid IBAN (shape and mod-97 check)',
    };
  }
  const name = typeof partyName === 'string' ? partyName.trim() : '';
  if (name === '') {
    return { ok: false, code: RequestErrorCodes.NAME_INVALID, message: 'partyName is empty' };
  }
  // The name as sent upstream (trimmed), in characters as ISO 20022's Max140Text counts them: code
  // points, not UTF-16 units (an emoji or a rare CJK ideograph takes two). A string never has more
  // code points than units, so only a name over 140 units is counted again.
  if (name.length > MAX_PARTY_NAME && [...name].length > MAX_PARTY_NAME) {
    return {
      ok: false,
      code: RequestErrorCodes.NAME_INVALID,
      message: `partyName is longer than ${MAX_PARTY_NAME} characters`,
    };
  }
  const requestedAt = parseInstant(body.requestedAt);
  if (requestedAt === null) {
    return {
      ok: false,
      code: RequestErrorCodes.REQUESTED_AT_INVALID,
      message: 'requestedAt is not an instant',
    };
  }
  return {
    ok: true,
    request: { requestId, iban: normalizeIban(iban), partyName: name, requestedAt },
  };
}

type Headers = Record<string, Buffer | undefined>;

export function formatOf(headers: Headers): RequestFormat {
  const type = headers['content-type']?.toString('utf8').toLowerCase() ?? '';
  return type.startsWith('application/json') ? 'json' : 'avro';
}

/**
 * `vop-deadline` as epoch ms: decimal text, or an 8-byte big-endian long as Java clients may send;
 * without it, `fallbackStart` plus the default deadline. Null when the header is there but neither.
 */
export function deadlineOf(
  headers: Headers,
  fallbackStart: number,
  defaultDeadlineMs: number,
): number | null {
  const raw = headers['vop-deadline'];
  if (raw === undefined) return fallbackStart + defaultDeadlineMs;
  const text = raw.toString('utf8').trim();
  if (/^\d+$/.test(text)) return Number(text);
  if (raw.length === 8) return Number(raw.readBigInt64BE(0));
  return null;
}

export interface ReplyRoute {
  topic: string;
  partition?: number;
  /** Set when the requested reply topic was refused by the allow-list. */
  refusedTopic?: string;
  /** Set when `kafka_replyPartition` was there but not a 4-byte big-endian int (its length in bytes). */
  unreadablePartition?: number;
}

/**
 * Where the reply goes: `kafka_replyTopic` when the allow-list accepts it or it is the default topic,
 * else the default topic.
 */
export function replyRouteOf(
  headers: Headers,
  defaultTopic: string,
  allowed: RegExp,
  /** The verifier's own requests and DLQ topics: refused whatever the allow-list says (a reply there would be read back as a request). */
  never: readonly string[] = [],
): ReplyRoute {
  const route: ReplyRoute = { topic: defaultTopic };
  const asked = headers.kafka_replyTopic?.toString('utf8');
  if (asked !== undefined && asked !== '') {
    if (asked === defaultTopic || (allowed.test(asked) && !never.includes(asked))) route.topic = asked;
    else route.refusedTopic = asked;
  }
  const partition = headers.kafka_replyPartition;
  if (partition !== undefined && partition.length !== 4) route.unreadablePartition = partition.length;
  else if (partition !== undefined && route.refusedTopic === undefined)
    route.partition = partition.readInt32BE(0);
  return route;
}

/** `kafka_correlationId` echoed byte for byte; the request id when absent. */
export function correlationIdOf(headers: Headers, requestId: string | null): Buffer | null {
  return headers.kafka_correlationId ?? (requestId === null ? null : Buffer.from(requestId, 'utf8'));
}
