import type { IHeaders, KafkaMessage, Message } from '@fraudlink/kafkajs';
import type { IncomingRecord, OutgoingRecord, UnreadableBatch } from './types.ts';

export function toMessage(record: OutgoingRecord): Message {
  const message: Message = { key: record.key, value: record.value };
  if (record.headers) message.headers = record.headers;
  if (record.partition !== undefined) message.partition = record.partition;
  if (record.timestamp !== undefined) message.timestamp = String(record.timestamp);
  return message;
}

/**
 * The most record bytes one partition takes in one send, and a cut send's requests in all. kafkajs
 * writes all of a send's records for one partition as one record batch and never splits it, and
 * the broker refuses a batch larger than the topic's `max.message.bytes` (1 MiB by default) with
 * MESSAGE_TOO_LARGE, which is final: a 5,000-row connector transaction to a one-partition topic
 * (the DLQ, when a format change rejects every row) is ~2 MB. Below the default with room for the
 * batch's own framing. Checked per partition by fix 15 (fixes/oversized-partition-batch.ts);
 * producer.ts cuts such a send.
 */
export const MAX_SEND_BYTES = 900_000;
/** A record batch's framing before its records (v2: base offset, length, epoch, magic, CRC...). */
const BATCH_OVERHEAD_BYTES = 61;
/** A record's framing beyond its key, value and headers: attributes, deltas and lengths as varints. */
const RECORD_OVERHEAD_BYTES = 32;

const sizeOf = (value: string | Buffer | null | undefined): number =>
  value == null ? 0 : typeof value === 'string' ? Buffer.byteLength(value) : value.length;

/** The bytes of a length as a record writes it: a zigzag varint, 7 bits a byte. */
const lengthBytes = (n: number): number =>
  n < 0x40 ? 1 : n < 0x2000 ? 2 : n < 0x10_0000 ? 3 : n < 0x800_0000 ? 4 : 5;

/** About the bytes a record takes in a record batch (never fewer, at most a few bytes more). */
export function recordBytes(record: OutgoingRecord): number {
  let bytes = RECORD_OVERHEAD_BYTES + sizeOf(record.key) + sizeOf(record.value);
  const headers = record.headers;
  if (headers) {
    // for...in, not Object.entries: no array per header on the connector's hot path.
    for (const name in headers) {
      const nameBytes = sizeOf(name);
      const valueBytes = sizeOf(headers[name]);
      bytes += lengthBytes(nameBytes) + nameBytes + lengthBytes(valueBytes) + valueBytes;
    }
  }
  return bytes;
}

/**
 * About the bytes of one record batch holding these records (at most a few bytes more), which is
 * what the broker weighs against the topic's `max.message.bytes`.
 */
export function batchBytes(records: readonly OutgoingRecord[]): number {
  let bytes = BATCH_OVERHEAD_BYTES;
  for (const record of records) bytes += recordBytes(record);
  return bytes;
}

/** The largest of these records as a batch of its own, to name in an error: its bytes and topic. */
export function largestRecord(records: readonly OutgoingRecord[]): { bytes: number; topic: string } {
  let largest = { bytes: 0, topic: '' };
  for (const record of records) {
    const bytes = batchBytes([record]);
    if (bytes > largest.bytes) largest = { bytes, topic: record.topic };
  }
  return largest;
}

/**
 * Cuts records, in order, into consecutive runs of at most `maxBytes` (recordBytes), each holding at
 * most one record of each topic in `unbatched`; a record larger than `maxBytes` alone is a run of
 * its own, for the broker to judge. Sent one after another, the runs keep every partition's order.
 */
export function sendChunks(
  records: OutgoingRecord[],
  maxBytes = MAX_SEND_BYTES,
  unbatched: ReadonlySet<string> = new Set(),
): OutgoingRecord[][] {
  const chunks: OutgoingRecord[][] = [];
  let start = 0;
  let bytes = 0;
  const alone = new Set<string>();
  for (let i = 0; i < records.length; i++) {
    const record = records[i] as OutgoingRecord;
    const size = recordBytes(record);
    if ((bytes + size > maxBytes || alone.has(record.topic)) && i > start) {
      chunks.push(records.slice(start, i));
      start = i;
      bytes = 0;
      alone.clear();
    }
    bytes += size;
    if (unbatched.has(record.topic)) alone.add(record.topic);
  }
  if (start < records.length) chunks.push(start === 0 ? records : records.slice(start));
  return chunks;
}

/** Groups records by topic, keeping their order (kafkajs keeps per-partition order within a topic). */
export function toTopicMessages(records: OutgoingRecord[]): { topic: string; messages: Message[] }[] {
  const byTopic = new Map<string, Message[]>();
  for (const record of records) {
    let messages = byTopic.get(record.topic);
    if (!messages) {
      messages = [];
      byTopic.set(record.topic, messages);
    }
    messages.push(toMessage(record));
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

function copyHeaders(headers: IHeaders): Record<string, Buffer | undefined> {
  const out: Record<string, Buffer | undefined> = {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    // A repeated header name arrives as an array: the last value wins, as in most Kafka clients.
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    // A header without a value (Kafka allows it; kafkajs decodes it as null) reads as absent.
    out[name] = last == null ? undefined : Buffer.isBuffer(last) ? last : Buffer.from(last);
  }
  return out;
}

/** kafkajs decodes header values to Buffers: its object is used as it is unless a name repeats. */
function headersOf(headers: IHeaders | undefined): Record<string, Buffer | undefined> {
  if (!headers) return {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !Buffer.isBuffer(value)) return copyHeaders(headers);
  }
  return headers as Record<string, Buffer | undefined>;
}

export function toIncoming(topic: string, partition: number, message: KafkaMessage): IncomingRecord {
  const record: IncomingRecord = {
    topic,
    partition,
    offset: message.offset,
    key: message.key,
    value: message.value,
    headers: headersOf(message.headers),
    timestamp: Number(message.timestamp),
  };
  // Only the record standing for an unreadable batch has it (unreadable-batches.ts).
  const { unreadableBatch } = message as { unreadableBatch?: UnreadableBatch };
  if (unreadableBatch) record.unreadableBatch = unreadableBatch;
  return record;
}
