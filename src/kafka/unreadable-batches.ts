import { createRequire } from 'node:module';
import { kafkajsPath } from './kafkajs-path.ts';
import type { UnreadableBatch } from './types.ts';

/**
 * Record batches whose records cannot be read: a compressed batch that does not decompress (corrupt
 * bytes, a codec id Kafka does not define) or would decompress past the reader's bound
 * (`MAX_DECOMPRESSED_BYTES`, codecs.ts), or whose decompressed bytes are not records. kafkajs's
 * batch decoder threw, the fetch failed, and the consumer crashed and restarted into the same batch
 * for ever: every later record of the partition stayed unread. Such a batch is now delivered as ONE
 * record, at the batch's last offset (base offset + last offset delta, both in its header, read
 * without decompressing), with no key, value or headers, and `unreadableBatch` saying which offsets
 * it covers, its codec, why and its compressed size (`IncomingRecord.unreadableBatch`). A reader
 * that handles that record and moves past it moves past the whole batch.
 *
 * A batch left for the next fetch (kafkajs's KafkaJSPartialMessageError: cut by the fetch's
 * `maxBytes`, or past what the fetch's decompression budget has left) is not unreadable: it comes
 * first in the next fetch, which decompresses it with the whole bound.
 */

const require = createRequire(import.meta.url);
export const recordBatchDecoderModulePath = kafkajsPath('protocol/recordBatch/v0/decoder.js');

/** Kafka's codec names by the id in a batch's attributes (its low 3 bits). */
const CODEC_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const CODEC_MASK = 0x07;
const TRANSACTIONAL_FLAG = 0x10;
const CONTROL_FLAG = 0x20;
const LOG_APPEND_TIME_FLAG = 0x08;

/** Base offset and length (12 bytes), then the 49 bytes of a v2 batch's header before its records. */
const LENGTH_FIELDS_BYTES = 12;
const HEADER_AFTER_LENGTH_BYTES = 49;

/** A v2 record batch's header, as kafkajs's decoder reads it (offsets and ids as decimal strings). */
export interface RecordBatchHeader {
  firstOffset: string;
  lastOffset: string;
  /** The batch's bytes after its length field. */
  length: number;
  partitionLeaderEpoch: number;
  attributes: number;
  lastOffsetDelta: number;
  firstTimestamp: string;
  maxTimestamp: string;
  producerId: string;
  producerEpoch: number;
  firstSequence: number;
}

/** The header of the record batch at `offset` in `buffer`; undefined when the buffer ends within it. */
export function recordBatchHeaderAt(buffer: Buffer, offset: number): RecordBatchHeader | undefined {
  if (buffer.length < offset + LENGTH_FIELDS_BYTES + HEADER_AFTER_LENGTH_BYTES) return undefined;
  const base = buffer.readBigInt64BE(offset);
  const lastOffsetDelta = buffer.readInt32BE(offset + 23);
  return {
    firstOffset: base.toString(),
    lastOffset: (base + BigInt(lastOffsetDelta)).toString(),
    length: buffer.readInt32BE(offset + 8),
    partitionLeaderEpoch: buffer.readInt32BE(offset + 12),
    attributes: buffer.readInt16BE(offset + 21),
    lastOffsetDelta,
    firstTimestamp: buffer.readBigInt64BE(offset + 27).toString(),
    maxTimestamp: buffer.readBigInt64BE(offset + 35).toString(),
    producerId: buffer.readBigInt64BE(offset + 43).toString(),
    producerEpoch: buffer.readInt16BE(offset + 51),
    firstSequence: buffer.readInt32BE(offset + 53),
  };
}

export const codecOfAttributes = (attributes: number): string =>
  CODEC_NAMES[attributes & CODEC_MASK] ?? `codec ${attributes & CODEC_MASK}`;

/**
 * The one record standing for an unreadable batch, in the shape kafkajs's record decoder gives
 * (its batch context drives kafkajs's filters: a batch of an aborted transaction stays unseen).
 */
export function unreadableBatchMessage(header: RecordBatchHeader, batch: Buffer, reason: string) {
  const compressed = batch.subarray(LENGTH_FIELDS_BYTES + HEADER_AFTER_LENGTH_BYTES);
  const unreadableBatch: UnreadableBatch = {
    firstOffset: header.firstOffset,
    lastOffset: header.lastOffset,
    codec: codecOfAttributes(header.attributes),
    reason,
    bytes: compressed.length,
    // A copy: a view would keep the whole fetch response alive until the record is handled.
    data: Buffer.from(compressed),
  };
  const batchContext = {
    firstOffset: header.firstOffset,
    firstTimestamp: header.firstTimestamp,
    partitionLeaderEpoch: header.partitionLeaderEpoch,
    inTransaction: (header.attributes & TRANSACTIONAL_FLAG) !== 0,
    isControlBatch: (header.attributes & CONTROL_FLAG) !== 0,
    lastOffsetDelta: header.lastOffsetDelta,
    producerId: header.producerId,
    producerEpoch: header.producerEpoch,
    firstSequence: header.firstSequence,
    maxTimestamp: header.maxTimestamp,
    // kafkajs's TimestampTypes: 0 create time, 1 log append time.
    timestampType: header.attributes & LOG_APPEND_TIME_FLAG ? 1 : 0,
  };
  return {
    batchContext,
    records: [
      {
        magicByte: 2,
        attributes: 0,
        timestamp: header.maxTimestamp,
        offset: header.lastOffset,
        key: null,
        value: null,
        headers: {},
        isControlRecord: false,
        batchContext,
        unreadableBatch,
      },
    ],
  };
}

interface FetchDecoder {
  buffer: Buffer;
  offset: number;
}
type RecordBatchDecoder = (decoder: FetchDecoder) => Promise<unknown>;

const PARTIAL = 'KafkaJSPartialMessageError';
const INSTALLED = Symbol.for('fraudlink.kafkajs.unreadableBatches');

/**
 * Replaces kafkajs's record batch decoder (`protocol/recordBatch/v0/decoder.js`, which the fetch
 * responses' `decodeMessages` requires at its first load) by one that turns a compressed batch it
 * cannot read into `unreadableBatchMessage`. Must run before any fetch response module loads, and
 * after the record decoder's swap (the batch decoder takes the record decoder when it loads).
 */
export function installUnreadableBatches(): void {
  const cached = require.cache[recordBatchDecoderModulePath];
  if ((cached?.exports as { [INSTALLED]?: true } | undefined)?.[INSTALLED]) return;
  const original = require(recordBatchDecoderModulePath) as RecordBatchDecoder;
  const decode = async (fetchDecoder: FetchDecoder) => {
    const start = fetchDecoder.offset;
    const header = recordBatchHeaderAt(fetchDecoder.buffer, start);
    const unreadable = (reason: string) => {
      const end = start + LENGTH_FIELDS_BYTES + (header as RecordBatchHeader).length;
      fetchDecoder.offset = end;
      const batch = fetchDecoder.buffer.subarray(start, end);
      const { batchContext, records } = unreadableBatchMessage(header as RecordBatchHeader, batch, reason);
      return { ...batchContext, records };
    };
    const codecId = (header?.attributes ?? 0) & CODEC_MASK;
    // kafkajs would read the compressed bytes of a codec it does not know as records.
    const whole =
      header !== undefined && fetchDecoder.buffer.length >= start + LENGTH_FIELDS_BYTES + header.length;
    if (whole && codecId >= CODEC_NAMES.length) {
      return unreadable(`compression codec ${codecId} is not one of Kafka's`);
    }
    try {
      return await original(fetchDecoder);
    } catch (err) {
      // The original checks that the whole batch is in the response before it decompresses it.
      if (!whole || codecId === 0 || (err as Error)?.name === PARTIAL) throw err;
      return unreadable(reasonOf(err));
    }
  };
  (decode as { [INSTALLED]?: true })[INSTALLED] = true;
  (require.cache[recordBatchDecoderModulePath] as NodeJS.Module).exports = decode;
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
