import {
  CODEC_MASK,
  CODEC_NAMES,
  LENGTH_FIELDS_BYTES,
  type RecordBatchHeader,
  reasonOf,
  recordBatchDecoderModulePath,
  recordBatchHeaderAt,
  unreadableBatchMessage,
} from '../unreadable-batches.ts';
import { require, swapModule } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 18. Record batches whose records cannot be read.
 *
 * A compressed batch that does not decompress (corrupt bytes, a codec id Kafka does not define) or
 * would decompress past the reader's bound (`MAX_DECOMPRESSED_BYTES`, codecs.ts), or whose
 * decompressed bytes are not records, makes kafkajs's batch decoder throw: the fetch fails, and the
 * consumer crashes and restarts into the same batch for ever, every later record of the partition
 * unread.
 *
 * Such a batch is delivered as ONE record, at the batch's last offset (base offset + last offset
 * delta, both in its header, read without decompressing), with no key, value or headers, and
 * `unreadableBatch` saying which offsets it covers, its codec, why and its compressed size
 * (`IncomingRecord.unreadableBatch`). A reader that handles that record and moves past it moves
 * past the whole batch. The record keeps the batch's context, so kafkajs's abort filter still hides
 * it in an aborted transaction. The broker decompresses every batch it is sent to validate it, so a
 * corrupt batch cannot be produced; an 80 MiB ZSTD bomb (2.6 KB on disk) is accepted.
 *
 * A batch left for the next fetch (kafkajs's KafkaJSPartialMessageError: cut by the fetch's
 * `maxBytes`, or past what the fetch's decompression budget has left) is not unreadable: it comes
 * first in the next fetch, which decompresses it with the whole bound.
 *
 * Test: test/kafka/unreadable-batches.test.ts, "record batches that cannot be read" › "turns a batch
 * whose compressed bytes are corrupt into one record at its last offset"; against the broker,
 * test/kafka/unreadable-batches.int.test.ts (a bomb read as one record, then the partition's other
 * records), and the verifier's and replay's unreadable-batch tests.
 */

interface FetchDecoder {
  buffer: Buffer;
  offset: number;
}
type RecordBatchDecoder = (decoder: FetchDecoder) => Promise<unknown>;

const PARTIAL = 'KafkaJSPartialMessageError';

/**
 * Replaces kafkajs's record batch decoder (`protocol/recordBatch/v0/decoder.js`, which the fetch
 * responses' `decodeMessages` requires at its first load) by one that turns a compressed batch it
 * cannot read into `unreadableBatchMessage`. Must run before any fetch response module loads, and
 * after the record decoder's swap (fix 9: the batch decoder takes the record decoder when it loads).
 */
export function install(state: KafkajsFixState): void {
  installOnce(state, 'unreadable-record-batches', () => {
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
    swapModule(recordBatchDecoderModulePath, decode);
  });
}
