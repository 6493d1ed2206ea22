import { kafkajsPath } from './kafkajs-path.ts';
import type { UnreadableBatch } from './types.ts';

/**
 * What fix 18 (fixes/unreadable-record-batches.ts) reads of a record batch it cannot decode: its
 * header, without decompressing, and the one record that stands for the whole batch.
 */

export const recordBatchDecoderModulePath = kafkajsPath('protocol/recordBatch/v0/decoder.js');

/** Kafka's codec names by the id in a batch's attributes (its low 3 bits). */
export const CODEC_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
export const CODEC_MASK = 0x07;
const TRANSACTIONAL_FLAG = 0x10;
const CONTROL_FLAG = 0x20;
const LOG_APPEND_TIME_FLAG = 0x08;

/** Base offset and length (12 bytes), then the 49 bytes of a v2 batch's header before its records. */
export const LENGTH_FIELDS_BYTES = 12;
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

export function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
