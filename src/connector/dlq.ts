import { batchBytes, type OutgoingRecord } from '../kafka/index.ts';

/**
 * Header of a DLQ copy that was cut down to fit its topic: the bytes the whole record (key, value
 * and headers, as a record batch of its own) had before, in decimal.
 */
export const DLQ_TRUNCATED_HEADER = 'dlq-truncated';

const toBuffer = (data: string | Buffer): Buffer => (typeof data === 'string' ? Buffer.from(data) : data);

/**
 * `record` as it fits a topic whose `max.message.bytes` is `maxBytes`: unchanged when it fits;
 * otherwise its value, then its key, cut to their first bytes, with the `dlq-truncated` header naming
 * the record's original size. A record whose headers alone do not fit is returned with value and
 * key empty, for the broker to judge.
 */
export function fitForDlq(record: OutgoingRecord, maxBytes: number): OutgoingRecord {
  const original = batchBytes([record]);
  if (original <= maxBytes) return record;
  const headers = { ...record.headers, [DLQ_TRUNCATED_HEADER]: String(original) };
  const bare: OutgoingRecord = { ...record, key: null, value: null, headers };
  let room = maxBytes - batchBytes([bare]);
  const key = record.key === null ? null : toBuffer(record.key);
  // A key is kept whole when it fits: the value goes first.
  const keptKey = key === null ? null : key.subarray(0, Math.max(0, room));
  room -= keptKey?.length ?? 0;
  const value = record.value === null ? null : record.value.subarray(0, Math.max(0, room));
  return { ...bare, key: keptKey, value };
}
