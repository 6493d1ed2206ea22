import { isValidNormalizedIban, MAX_IBAN_LENGTH, normalizeIban } from '../iban.ts';
import { parseInstant } from '../instant.ts';
import { clip } from '../logger.ts';
import { MAX_REPLY_ERROR_MESSAGE } from './reply.ts';

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
  KEY_TOO_LONG: 'REQUEST_KEY_TOO_LONG',
  REQUEST_ID_TOO_LONG: 'REQUEST_ID_TOO_LONG',
  CORRELATION_ID_TOO_LONG: 'REQUEST_CORRELATION_ID_TOO_LONG',
  HEADER_TOO_LARGE: 'REQUEST_HEADER_TOO_LARGE',
  IBAN_TOO_LONG: 'REQUEST_IBAN_TOO_LONG',
  NAME_TOO_LONG: 'REQUEST_NAME_TOO_LONG',
} as const;

export type RequestErrorCode = (typeof RequestErrorCodes)[keyof typeof RequestErrorCodes];

/**
 * Limits on what a requester sends, checked before any work, cache or log line touches it: a record
 * key, id or header of megabytes would otherwise be decoded, cached, logged and echoed in the reply
 * (making a reply larger than the reply topic takes). docs/bad-input.md lists them.
 */
/** The record key, which is the request's id and the reply's key: UTF-8 bytes. */
export const MAX_KEY_BYTES = 256;
/** The `requestId` field of the value (the reply's key when the record has none): UTF-8 bytes. */
export const MAX_REQUEST_ID_BYTES = 256;
/** `kafka_correlationId`, echoed in the reply: bytes. */
export const MAX_CORRELATION_ID_BYTES = 256;
/** Any one header's value (`kafka_replyTopic`, `vop-deadline`, `kafka_replyPartition`, ...): bytes. */
export const MAX_HEADER_VALUE_BYTES = 1024;
/** All headers together, names and values: bytes. */
export const MAX_HEADERS_BYTES = 8 * 1024;
/** The party name in characters (code points), after trimming: ISO 20022's Max140Text. */
export const MAX_PARTY_NAME = 140;
/** The party name as sent, before trimming, in UTF-16 units: ample room for spaces around 140 characters. */
export const MAX_PARTY_NAME_INPUT = 1024;
/** The IBAN as sent, spaces included: each of its 34 characters followed by a space. */
export const MAX_IBAN_INPUT = 2 * MAX_IBAN_LENGTH;
/** An error message in a reply or a DLQ header (a decoder's may quote the value): characters. */
export const MAX_ERROR_MESSAGE = MAX_REPLY_ERROR_MESSAGE;

/** A request refused by a limit or a rule: its stable code and a message that quotes no input. */
export interface Refusal {
  code: RequestErrorCode;
  message: string;
}

export type Validated = { ok: true; request: VerificationRequest } | ({ ok: false } & Refusal);

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

/** More UTF-8 bytes than `max`, counted only when the UTF-16 length leaves it open (bytes >= units). */
function overBytes(text: string, max: number): boolean {
  return text.length > max || Buffer.byteLength(text, 'utf8') > max;
}

/** The value's fields over their limits, checked before any of them is trimmed, normalised or cached. */
function fieldLimitRefusal(body: Record<string, unknown>): Refusal | undefined {
  const { requestId, iban, partyName } = body;
  if (typeof requestId === 'string' && overBytes(requestId, MAX_REQUEST_ID_BYTES)) {
    return {
      code: RequestErrorCodes.REQUEST_ID_TOO_LONG,
      message: `requestId is longer than ${MAX_REQUEST_ID_BYTES} bytes`,
    };
  }
  if (
    typeof iban === 'string' &&
    (iban.length > MAX_IBAN_INPUT || iban.replace(/\s+/g, '').length > MAX_IBAN_LENGTH)
  ) {
    return {
      code: RequestErrorCodes.IBAN_TOO_LONG,
      message: `iban is longer than ${MAX_IBAN_LENGTH} characters once spaces are removed`,
    };
  }
  if (typeof partyName === 'string' && partyName.length > MAX_PARTY_NAME_INPUT) {
    return {
      code: RequestErrorCodes.NAME_TOO_LONG,
      message: `partyName is longer than ${MAX_PARTY_NAME} characters`,
    };
  }
  return undefined;
}

/** Validates a decoded request at the edge: sizes first, then shape, IBAN check and name. */
export function validateRequest(body: Record<string, unknown>): Validated {
  const tooLong = fieldLimitRefusal(body);
  if (tooLong) return { ok: false, ...tooLong };
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
      code: RequestErrorCodes.NAME_TOO_LONG,
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

/**
 * The first limit the record's key or headers pass (MAX_KEY_BYTES, MAX_CORRELATION_ID_BYTES,
 * MAX_HEADER_VALUE_BYTES, MAX_HEADERS_BYTES), checked before the value is read. A key too long is
 * no usable id: the request cannot be answered, and goes to the DLQ.
 */
export function recordLimitRefusal(key: Buffer | null, headers: Headers): Refusal | undefined {
  if (key !== null && key.length > MAX_KEY_BYTES) {
    return {
      code: RequestErrorCodes.KEY_TOO_LONG,
      message: `the record key (the request id) is longer than ${MAX_KEY_BYTES} bytes`,
    };
  }
  if ((headers.kafka_correlationId?.length ?? 0) > MAX_CORRELATION_ID_BYTES) {
    return {
      code: RequestErrorCodes.CORRELATION_ID_TOO_LONG,
      message: `kafka_correlationId is longer than ${MAX_CORRELATION_ID_BYTES} bytes`,
    };
  }
  let total = 0;
  for (const [name, value] of Object.entries(headers)) {
    const bytes = value?.length ?? 0;
    if (bytes > MAX_HEADER_VALUE_BYTES) {
      return {
        code: RequestErrorCodes.HEADER_TOO_LARGE,
        message: `header ${clip(name, 64)} is larger than ${MAX_HEADER_VALUE_BYTES} bytes`,
      };
    }
    total += Buffer.byteLength(name, 'utf8') + bytes;
  }
  if (total > MAX_HEADERS_BYTES) {
    return {
      code: RequestErrorCodes.HEADER_TOO_LARGE,
      message: `the headers are larger than ${MAX_HEADERS_BYTES} bytes together`,
    };
  }
  return undefined;
}

/** Kafka's rule for a topic name: 1 to 249 of these characters, and neither "." nor "..". */
const LEGAL_TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

export function isLegalTopicName(name: string): boolean {
  return LEGAL_TOPIC_NAME.test(name) && name !== '.' && name !== '..';
}

/** Where a reply may go besides the default reply topic. */
export interface ReplyTopicRules {
  defaultTopic: string;
  /** VERIFY_REPLY_TOPICS, compiled to match whole names (config). */
  allowed: RegExp;
  /**
   * fraudlink's own topics (requests, DLQ, alerts, alerts DLQ, connector offsets): refused whatever
   * the allow-list says (a reply there would be read back as a request or an alert).
   */
  own: readonly string[];
}

/** Why `kafka_replyTopic` was refused, or undefined when a reply may go there. */
export function replyTopicRefusal(asked: string, rules: ReplyTopicRules): string | undefined {
  if (asked === rules.defaultTopic) return undefined;
  if (!isLegalTopicName(asked)) return 'not a legal Kafka topic name';
  if (asked.startsWith('__')) return 'an internal topic';
  if (rules.own.includes(asked)) return "one of fraudlink's own topics";
  if (!rules.allowed.test(asked)) return 'not matched in full by VERIFY_REPLY_TOPICS';
  return undefined;
}

export interface ReplyRoute {
  topic: string;
  partition?: number;
  /** Set when the requested reply topic was refused: the name, cut for a log line. */
  refusedTopic?: string;
  /** Why it was refused (replyTopicRefusal). */
  refusedBecause?: string;
  /** Set when `kafka_replyPartition` was there but not a 4-byte big-endian int (its length in bytes). */
  unreadablePartition?: number;
}

/** A longer header is no legal topic name: only this much of it is read, for the log line. */
const TOPIC_HEADER_READ_BYTES = 250;

/**
 * Where the reply goes: `kafka_replyTopic` when replyTopicRefusal finds nothing against it, else the
 * default topic.
 */
export function replyRouteOf(headers: Headers, rules: ReplyTopicRules): ReplyRoute {
  const route: ReplyRoute = { topic: rules.defaultTopic };
  const header = headers.kafka_replyTopic;
  if (header !== undefined && header.length > 0) {
    const asked = header.subarray(0, TOPIC_HEADER_READ_BYTES).toString('utf8');
    const refusal =
      header.length > TOPIC_HEADER_READ_BYTES
        ? 'not a legal Kafka topic name'
        : replyTopicRefusal(asked, rules);
    if (refusal === undefined) route.topic = asked;
    else {
      route.refusedTopic = clip(asked);
      route.refusedBecause = refusal;
    }
  }
  const partition = headers.kafka_replyPartition;
  if (partition !== undefined && partition.length !== 4) route.unreadablePartition = partition.length;
  else if (partition !== undefined && route.refusedTopic === undefined)
    route.partition = partition.readInt32BE(0);
  return route;
}

/**
 * `kafka_correlationId` echoed byte for byte; the request id when absent, or when longer than
 * MAX_CORRELATION_ID_BYTES (refused then): only bounded strings go into a reply.
 */
export function correlationIdOf(headers: Headers, requestId: string | null): Buffer | null {
  const asked = headers.kafka_correlationId;
  if (asked !== undefined && asked.length <= MAX_CORRELATION_ID_BYTES) return asked;
  return requestId === null ? null : Buffer.from(requestId, 'utf8');
}
