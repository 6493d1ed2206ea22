import type { Encoder } from '../kafka/avro-encoder.ts';
import { batchBytes } from '../kafka/records.ts';
import type { OutgoingRecord } from '../kafka/types.ts';
import {
  type AlertEvent,
  type EventType,
  fingerprintOf,
  type MappedRow,
  mapRow,
  type RowErrorCode,
  RowErrorCodes,
  rowFingerprintOf,
  rowText,
} from './rows.ts';

/**
 * One export page made ready for publishing, in a shape that crosses a worker-thread boundary
 * cheaply: columns (typed arrays and string arrays) rather than an object per row, and every event's
 * Avro value packed into one buffer whose memory is transferred, not copied.
 */
export interface PreparedPage {
  nextCursor: string | null;
  /** Feed order, one entry per row: KIND_UPSERTED, KIND_DEACTIVATED or KIND_REJECTED. */
  kinds: Uint8Array;
  /** Per event, in feed order (rejected rows have no entry): */
  updatedAt: Float64Array;
  eventIds: string[];
  /** Identifies the event's content (rowFingerprintOf): what a row served again at the mark is matched on. */
  rowFingerprints: string[];
  alertIds: string[];
  /** The normalised IBAN, the record key. */
  keys: string[];
  /** Each event's value in the Confluent wire format, back to back; event i ends at `ends[i]`. */
  values: Uint8Array;
  ends: Uint32Array;
  /** Per rejected row, in feed order. */
  rejected: PreparedRejection[];
}

export const KIND_UPSERTED = 0;
export const KIND_DEACTIVATED = 1;
export const KIND_REJECTED = 2;
export const kindTypes: readonly EventType[] = ['AlertUpserted', 'AlertDeactivated'];

/** A row that cannot become an event: bound for the DLQ with its raw JSON and the rule it broke. */
export interface PreparedRejection {
  raw: string;
  code: RowErrorCode;
  message: string;
  id: string | null;
  /** Its readable `updatedAt`, if any: where it sits against the cursor's high-water mark. */
  updatedAt: number | null;
  /** Identifies a re-served copy of the same raw row (see CursorTracker.admitRejected). */
  fingerprint: string;
  observedAt: number;
}

export type AlertEncoders = Record<EventType, Encoder<AlertEvent>>;

/** What a page's events must fit in. */
export interface PageLimits {
  /**
   * The alerts topic's `max.message.bytes`: an event larger than this as a record batch of its own
   * (key, Avro value and headers, uncompressed) goes to the DLQ as ROW_TOO_LARGE instead, so that one
   * row never fails its page's transaction. Unset, nothing is checked.
   */
  eventMaxBytes?: number;
}

/** The alerts-topic record of an event: its key, value and headers as published. */
export function eventRecord(
  topic: string,
  event: { type: EventType; key: string; value: Buffer; eventId: string; alertId: string },
): OutgoingRecord {
  return {
    topic,
    key: event.key,
    value: event.value,
    headers: { 'event-type': event.type, 'event-id': event.eventId, 'alert-id': event.alertId },
  };
}

/**
 * Bytes an event's record could take beyond its value, computed from string lengths only (a UTF-16
 * unit is at most 3 UTF-8 bytes): below the limit by this much, the exact size is not computed.
 */
const eventBytesBound = (event: AlertEvent, valueBytes: number): number =>
  valueBytes + 3 * (event.alertId.length + event.iban.length) + 256;

/** Room for a typical event (~150 bytes framed); the buffer doubles when a page needs more. */
const BYTES_PER_ROW_HINT = 256;

/**
 * Validates, maps and Avro-encodes every row of a page (SPEC §4). Pure and synchronous: the
 * connector runs it in its page worker thread. InvalidInputError (AVRO_ENCODE) only if a mapped event
 * breaks its own schema, which is a bug, never a row problem.
 */
export function preparePage(
  rows: readonly unknown[],
  nextCursor: string | null,
  observedAt: number,
  encoders: AlertEncoders,
  limits: PageLimits = {},
): PreparedPage {
  const kinds = new Uint8Array(rows.length);
  const updatedAt: number[] = [];
  const ends: number[] = [];
  const eventIds: string[] = [];
  const rowFingerprints: string[] = [];
  const alertIds: string[] = [];
  const keys: string[] = [];
  const rejected: PreparedRejection[] = [];
  // Not pooled: its whole ArrayBuffer is ours to transfer.
  let values = Buffer.allocUnsafeSlow(Math.max(1, rows.length) * BYTES_PER_ROW_HINT);
  let offset = 0;
  const reject = (i: number, raw: unknown, mapped: Extract<MappedRow, { ok: false }>) => {
    kinds[i] = KIND_REJECTED;
    const text = rowText(raw, mapped.code);
    rejected.push({
      raw: text,
      code: mapped.code,
      message: mapped.message,
      id: mapped.id,
      updatedAt: mapped.updatedAt,
      fingerprint: fingerprintOf(text),
      observedAt,
    });
  };
  for (let i = 0; i < rows.length; i++) {
    const raw = rows[i];
    const mapped = mapRow(raw, observedAt);
    if (!mapped.ok) {
      reject(i, raw, mapped);
      continue;
    }
    const { event, type } = mapped;
    const encoder = encoders[type];
    let end = encoder.encodeInto(event, values, offset);
    while (end < 0) {
      const bigger = Buffer.allocUnsafeSlow(values.length * 2);
      values.copy(bigger, 0, 0, offset);
      values = bigger;
      end = encoder.encodeInto(event, values, offset);
    }
    const tooLarge = oversized(event, type, values.subarray(offset, end), limits.eventMaxBytes);
    if (tooLarge !== undefined) {
      // Its encoded bytes stay behind `offset`, overwritten by the next event.
      reject(i, raw, {
        ok: false,
        code: RowErrorCodes.TOO_LARGE,
        message: tooLarge,
        id: event.alertId,
        updatedAt: event.updatedAt,
      });
      continue;
    }
    offset = end;
    kinds[i] = type === 'AlertUpserted' ? KIND_UPSERTED : KIND_DEACTIVATED;
    updatedAt.push(event.updatedAt);
    ends.push(end);
    eventIds.push(event.eventId);
    rowFingerprints.push(rowFingerprintOf(event));
    alertIds.push(event.alertId);
    keys.push(event.iban);
  }
  return {
    nextCursor,
    kinds,
    updatedAt: Float64Array.from(updatedAt),
    eventIds,
    rowFingerprints,
    alertIds,
    keys,
    values: values.subarray(0, offset),
    ends: Uint32Array.from(ends),
    rejected,
  };
}

/** Why an event is too large for its topic, or undefined when it fits (or nothing is checked). */
function oversized(
  event: AlertEvent,
  type: EventType,
  value: Buffer,
  maxBytes: number | undefined,
): string | undefined {
  if (maxBytes === undefined || eventBytesBound(event, value.length) <= maxBytes) return undefined;
  const bytes = batchBytes([eventRecord('', { type, key: event.iban, value, ...event })]);
  if (bytes <= maxBytes) return undefined;
  return (
    `the row's ${type} event is ${bytes} bytes, over the alerts topic's max.message.bytes ` +
    `(${maxBytes}): a field of the row is far larger than an alert's`
  );
}

/** Event `i`'s value: a view into the page's packed buffer, not a copy. */
export function eventValue(page: PreparedPage, i: number): Buffer {
  const start = i === 0 ? 0 : (page.ends[i - 1] as number);
  return Buffer.from(page.values.buffer, page.values.byteOffset + start, (page.ends[i] as number) - start);
}

/** The buffers `postMessage` should transfer rather than copy. */
export function transferablesOf(page: PreparedPage): ArrayBuffer[] {
  return [page.kinds.buffer, page.updatedAt.buffer, page.values.buffer, page.ends.buffer] as ArrayBuffer[];
}
