import { batchBytes } from './records.ts';
import type { HeaderValue, OutgoingRecord } from './types.ts';

/**
 * DLQ copies cut down to what their topic takes. A copy larger than the DLQ topic's
 * `max.message.bytes` fails its whole transaction at the broker (MESSAGE_TOO_LARGE, which no retry
 * helps), and every retry after it again: one oversized bad input would stop the service. Such a
 * copy is cut instead, and says so in its `dlq-truncated` header.
 */

/** The header a cut-down copy carries: the copy's size in bytes before it was cut (decimal). */
export const DLQ_TRUNCATED_HEADER = 'dlq-truncated';

/**
 * The headers a DLQ copy is about (why it is there, and where it came from): kept, cut to
 * `DLQ_CUT_BYTES` only when the copy does not fit otherwise. Any other header (the source record's
 * own) goes first.
 */
export const DLQ_KEPT_HEADERS: readonly string[] = [
  'error-code',
  'error-message',
  'source',
  'source-topic',
  'source-partition',
  'source-offset',
  'source-offset-first',
  'source-offset-last',
  'source-codec',
  'observed-at',
];

/** What a cut key or header value keeps, at most. */
export const DLQ_CUT_BYTES = 256;

/** Room left for the value's length varint to grow once a value fills the space. */
const LENGTH_SLACK_BYTES = 8;

export interface FitForDlqOptions {
  /**
   * What becomes of a value that does not fit whole: `truncate` (the default) keeps its first bytes,
   * as many as fit; `drop` leaves none (for a value that means nothing cut, compressed bytes say).
   */
  value?: 'truncate' | 'drop';
  /** The headers kept longest; DLQ_KEPT_HEADERS by default. */
  keep?: readonly string[];
}

/** `value` cut to at most `maxBytes` bytes; a string at a UTF-8 character boundary. */
export function cutBytes<T extends HeaderValue>(value: T, maxBytes: number): T {
  if (typeof value !== 'string') return (value.length <= maxBytes ? value : value.subarray(0, maxBytes)) as T;
  if (value.length * 3 <= maxBytes) return value;
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length <= maxBytes) return value;
  let end = maxBytes;
  // Back off to the first byte of a character: continuation bytes are 0b10xxxxxx.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8') as T;
}

type Headers = Record<string, HeaderValue>;

function cutHeaders(headers: Headers, names: (name: string) => boolean, maxBytes: number): Headers {
  const cut: Headers = {};
  for (const [name, value] of Object.entries(headers))
    cut[name] = names(name) ? cutBytes(value, maxBytes) : value;
  return cut;
}

/**
 * `record` as it is when it takes at most `maxBytes` as a record batch of its own (batchBytes, which
 * never counts fewer than kafkajs writes), and otherwise a copy cut down to fit, in this order until
 * it does: the value left out; the key and the headers outside `keep` cut to `DLQ_CUT_BYTES`; those
 * headers left out and the kept ones cut to `DLQ_CUT_BYTES`. Then, with `value: 'truncate'`, as much
 * of the value's beginning as still fits. The copy carries `dlq-truncated: <bytes before>`. A
 * `maxBytes` too small for even the last step's copy gets that copy, for the broker to refuse.
 */
export function fitForDlq(
  record: OutgoingRecord,
  maxBytes: number,
  options: FitForDlqOptions = {},
): OutgoingRecord {
  const originalBytes = batchBytes([record]);
  if (originalBytes <= maxBytes) return record;
  const keep = new Set(options.keep ?? DLQ_KEPT_HEADERS);
  const mark = { [DLQ_TRUNCATED_HEADER]: String(originalBytes) };
  const headers: Headers = { ...record.headers };
  delete headers[DLQ_TRUNCATED_HEADER];
  const key = record.key === null ? null : cutBytes(record.key, DLQ_CUT_BYTES);
  const steps: OutgoingRecord[] = [
    { ...record, value: null, headers: { ...headers, ...mark } },
    {
      ...record,
      key,
      value: null,
      headers: { ...cutHeaders(headers, (n) => !keep.has(n), DLQ_CUT_BYTES), ...mark },
    },
    {
      ...record,
      key,
      value: null,
      headers: {
        ...cutHeaders(
          Object.fromEntries(Object.entries(headers).filter(([name]) => keep.has(name))),
          () => true,
          DLQ_CUT_BYTES,
        ),
        ...mark,
      },
    },
  ];
  const fitting = steps.find((step) => batchBytes([step]) <= maxBytes);
  if (!fitting) return steps[steps.length - 1] as OutgoingRecord;
  const room = maxBytes - batchBytes([fitting]) - LENGTH_SLACK_BYTES;
  if (options.value === 'drop' || record.value === null || room <= 0) return fitting;
  return { ...fitting, value: cutBytes(record.value, room) };
}
