import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type * as Kafkajs from '@fraudlink/kafkajs';
import type * as Lz4 from 'lz4-napi';
import type * as Snappy from 'snappy';
import type { KafkaCompression } from '../config/index.ts';
import { KafkaError } from '../errors.ts';
import { type DecompressionBudget, fetchBudget } from './fetch-budget.ts';
import { kafkajsPath } from './kafkajs-path.ts';

/**
 * Kafka's compression codecs for kafkajs, which decodes only gzip itself: a record batch compressed
 * with Snappy, LZ4 or ZSTD (by a Java producer's `compression.type`, or by the broker when the
 * topic's own `compression.type` names a codec) crashed every kafkajs consumer that fetched it,
 * with "LZ4 compression not implemented". The codecs are registered through kafkajs's public
 * `CompressionCodecs` table; the native libraries load at a codec's first use.
 *
 * - ZSTD and gzip: Node's own zlib (ZSTD since Node 22.15); gzip's replaces kafkajs's own.
 * - LZ4: Kafka writes the LZ4 frame format (KIP-57), which lz4-napi reads and writes.
 * - Snappy: Kafka's Java client writes snappy-java's stream format (the "xerial" framing: a 16-byte
 *   header, then blocks each preceded by its 4-byte big-endian length); librdkafka and kafkajs
 *   write one raw Snappy block. Both are read; sends are written raw, as kafkajs-snappy writes
 *   them, which Java's snappy-java stream also reads. kafkajs-snappy (pure-JS snappyjs, one copy of
 *   the whole output per block, block lengths unchecked) is not used.
 *
 * Every codec decompresses synchronously, and all but gzip compress synchronously, on the caller's
 * thread (measured side by side, docs/benchmarks.md):
 * - zlib's asynchronous calls work through a batch in chunks, a libuv worker round trip each:
 *   replay of 1,000,000 ZSTD events ran at 237–330k events/s, synchronously at 341–509k (gzip,
 *   kafkajs's own codec: 226–286k against 352–494k).
 * - lz4-napi's and snappy's asynchronous calls allocate each output in a libuv worker, in that
 *   thread's malloc arena: the connector's peak RSS at 1,000,000 rows rose from ~183 MB
 *   (uncompressed) to 207–211 MB with LZ4 and 255 MB with Snappy; synchronously 191–192 and
 *   193–195 MB, at the same rate.
 * A batch is at most ~1 MB: a millisecond or so of the thread. gzip compresses an order of magnitude
 * slower (3.7 ms for 169 KB of alert-like JSON, a connector transaction's share of one partition,
 * against 0.32 ms for ZSTD, on this machine), so its compression stays asynchronous, as kafkajs
 * has it.
 *
 * A batch that does not decompress fails with a KafkaError naming its codec and compressed size. So
 * does a batch that would decompress to more than `MAX_DECOMPRESSED_BYTES`, checked before any
 * output is allocated: a small batch of one compressed run of zeros (a "bomb", by mistake or
 * malice: ZSTD turns 1 MB into tens of GB) would otherwise take the process's memory, and the
 * container would be killed with no word of why, again at every restart. The fetch does not fail:
 * unreadable-batches.ts turns the batch into one record that says so, at its last offset.
 *
 * A fetch response's batches decompress to at most its budget together (fetch-budget.ts: the
 * fetch's `maxBytes`, at most `MAX_DECOMPRESSED_BYTES`), checked the same way. Its first compressed
 * batch may take the whole bound, as a broker returns a fetch's first batch whatever its
 * `maxBytes`; a later one that would pass what the budget has left is not decompressed, and its
 * partition's records in the response end before it, as a fetch cut at its `maxBytes` ends
 * (kafkajs's KafkaJSPartialMessageError): the consumer fetches it again next, as a first batch.
 * Failing the fetch instead would stop any reader of a compressed topic whose records compress
 * better than a fetch's compressed bytes allow (16 MiB a partition at 4:1 is 64 MiB; JSON and
 * Avro records compress 5–20:1).
 */

const require = createRequire(import.meta.url);

/** kafkajs's codec interface: `compress` gets the records' Encoder, `decompress` the batch's records. */
interface Codec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

let lz4: typeof Lz4 | undefined;
let snappy: typeof Snappy | undefined;
const lz4Module = () => (lz4 ??= require('lz4-napi') as typeof Lz4);
const snappyModule = () => (snappy ??= require('snappy') as typeof Snappy);
const { KafkaJSPartialMessageError } = require(kafkajsPath('errors.js')) as {
  KafkaJSPartialMessageError: new (message: string) => Error;
};

/**
 * The most one record batch, and one fetch response's batches together, may decompress to: 64 MiB,
 * what a fetch takes of uncompressed batches (consumer.ts, read-topic.ts), so that a compressed
 * topic costs a reader no more memory than an uncompressed one (the chart gives the verifier
 * 512 MiB). A batch the broker takes at its default `max.message.bytes` (1 MiB) reaches it only
 * past 64:1, where JSON and Avro records compress 5–20:1.
 */
export const MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024;

class TooLargeError extends Error {
  constructor(maxBytes: number, bytes?: number) {
    super(
      `it decompresses to ${bytes === undefined ? 'more than' : `${bytes} bytes, over`} ${maxBytes} bytes, ` +
        "fraudlink's bound on one batch",
    );
  }
}

/** The length a raw Snappy block says it decompresses to: its leading varint (at most 32 bits). */
export function snappyLength(block: Buffer): number {
  let length = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const byte = block[i] as number;
    length += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return length;
  }
  throw new Error('Snappy block without a valid length');
}

/** LZ4 frame (KIP-57): magic, FLG, BD. Block sizes by BD's block maximum size field (4 to 7). */
const LZ4_MAGIC = 0x184d2204;
const LZ4_BLOCK_MAX = [0, 0, 0, 0, 64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024];

/**
 * The most LZ4 frames can decompress to, from their block headers alone: a stored block's own size,
 * the frame's block maximum for each compressed one (the content size a header may give is not
 * trusted: the decoder writes whatever the blocks hold). Frames concatenated are summed, and blocks
 * cut off by the end of the data counted as they stand. Undefined for data that does not begin as
 * an LZ4 frame, which the decoder then refuses.
 */
export function lz4FrameBound(data: Buffer): number | undefined {
  let bound: number | undefined;
  let offset = 0;
  while (offset + 7 <= data.length && data.readUInt32LE(offset) === LZ4_MAGIC) {
    const flg = data[offset + 4] as number;
    const blockMax = LZ4_BLOCK_MAX[((data[offset + 5] as number) >> 4) & 0x07] ?? 0;
    if (blockMax === 0) break;
    const blockChecksum = flg & 0x10 ? 4 : 0;
    // FLG, BD, then the content size, the dictionary id, the header checksum.
    offset += 6 + (flg & 0x08 ? 8 : 0) + (flg & 0x01 ? 4 : 0) + 1;
    bound ??= 0;
    while (offset + 4 <= data.length) {
      const header = data.readUInt32LE(offset);
      offset += 4;
      if (header === 0) break; // end mark
      const size = header & 0x7fffffff;
      bound += header & 0x80000000 ? size : blockMax;
      offset += size + blockChecksum;
    }
    if (flg & 0x04) offset += 4; // content checksum
  }
  return bound;
}

/** "\x82SNAPPY\0", then the stream format's version and oldest compatible version (int32 each). */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;
const BLOCK_LENGTH_BYTES = 4;

/** The raw Snappy blocks of a snappy-java stream; throws on a length that runs past the end. */
export function xerialBlocks(buffer: Buffer): Buffer[] {
  const blocks: Buffer[] = [];
  let offset = XERIAL_HEADER_BYTES;
  while (offset < buffer.length) {
    if (offset + BLOCK_LENGTH_BYTES > buffer.length) {
      throw new Error(`snappy-java stream cut within a block length, at byte ${offset} of ${buffer.length}`);
    }
    const length = buffer.readUInt32BE(offset);
    offset += BLOCK_LENGTH_BYTES;
    if (offset + length > buffer.length) {
      throw new Error(
        `snappy-java block of ${length} bytes at byte ${offset} runs past the stream's end (${buffer.length} bytes)`,
      );
    }
    blocks.push(buffer.subarray(offset, offset + length));
    offset += length;
  }
  return blocks;
}

export const isXerial = (buffer: Buffer) =>
  buffer.length >= XERIAL_HEADER_BYTES && buffer.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);

function snappyDecompress(buffer: Buffer, maxBytes: number): Buffer {
  const { uncompressSync } = snappyModule();
  const blocks = isXerial(buffer) ? xerialBlocks(buffer) : [buffer];
  const bytes = blocks.reduce((sum, block) => sum + snappyLength(block), 0);
  if (bytes > maxBytes) throw new TooLargeError(maxBytes, bytes);
  const raw = blocks.map((block) => uncompressSync(block, { asBuffer: true }) as Buffer);
  return raw.length === 1 ? (raw[0] as Buffer) : Buffer.concat(raw);
}

function lz4Decompress(frame: Buffer, maxBytes: number): Buffer {
  if ((lz4FrameBound(frame) ?? 0) > maxBytes) throw new TooLargeError(maxBytes);
  return lz4Module().decompressFrameSync(frame);
}

/** zlib's decompression, stopped at `maxBytes` of output. */
function zlibDecompress(decompress: (data: Buffer, options: { maxOutputLength: number }) => Buffer) {
  return (data: Buffer, maxBytes: number) => {
    try {
      return decompress(data, { maxOutputLength: maxBytes });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new TooLargeError(maxBytes);
      throw err;
    }
  };
}

const gzip = promisify(zlib.gzip);

/** A batch left for the next fetch: kafkajs's fetch decoders end a partition's batches at it. */
const leftForNextFetch = (name: string, budget: DecompressionBudget) =>
  new KafkaJSPartialMessageError(
    `a ${name} record batch left for the next fetch: this fetch response has decompressed ` +
      `${budget.spent} of its ${budget.maxBytes} bytes`,
  );

/**
 * A codec whose decompression failures name the codec and the batch's compressed size, bounded by
 * `maxBytes` and, within a fetch response, by what the response's budget has left.
 */
function codec(
  name: string,
  compress: (data: Buffer) => Promise<Buffer>,
  decompress: (data: Buffer, maxBytes: number) => Buffer,
  maxBytes: number,
): Codec {
  return {
    compress: (encoder) => compress(encoder.buffer),
    async decompress(buffer) {
      const budget = fetchBudget();
      const left = budget?.spent ? Math.min(maxBytes, budget.maxBytes - budget.spent) : maxBytes;
      if (budget && left <= 0) throw leftForNextFetch(name, budget);
      try {
        const output = decompress(buffer, left);
        if (budget) budget.spent += output.length;
        return output;
      } catch (err) {
        if (budget && left < maxBytes && err instanceof TooLargeError) throw leftForNextFetch(name, budget);
        throw new KafkaError(
          `could not decompress a ${name} record batch (${buffer.length} bytes compressed): ` +
            (err instanceof Error ? err.message : String(err)),
          { cause: err },
        );
      }
    },
  };
}

/** The codecs, refusing any batch that would decompress to more than `maxDecompressedBytes`. */
export function createCodecs(maxDecompressedBytes = MAX_DECOMPRESSED_BYTES) {
  const bounded = (
    name: string,
    compress: (data: Buffer) => Promise<Buffer>,
    decompress: (data: Buffer, maxBytes: number) => Buffer,
  ) => codec(name, compress, decompress, maxDecompressedBytes);
  return {
    Snappy: bounded('Snappy', async (data) => snappyModule().compressSync(data), snappyDecompress),
    LZ4: bounded('LZ4', async (data) => lz4Module().compressFrameSync(data), lz4Decompress),
    ZSTD: bounded(
      'ZSTD',
      async (data) => zlib.zstdCompressSync(data),
      zlibDecompress(zlib.zstdDecompressSync),
    ),
    // unzip, as kafkajs's own codec: gzip or zlib framing.
    GZIP: bounded('GZIP', gzip, zlibDecompress(zlib.unzipSync)),
  } as const;
}

export const CODECS = createCodecs();

/** Kafka's codec ids (a record batch's attribute bits, kafkajs's `CompressionTypes`), by name. */
export const CODEC_IDS: Record<KafkaCompression, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };

/** Registers the codecs with kafkajs: Snappy, LZ4 and ZSTD, and gzip in place of its own. */
export function installCodecs({
  CompressionCodecs,
  CompressionTypes,
}: Pick<typeof Kafkajs, 'CompressionCodecs' | 'CompressionTypes'>): void {
  CompressionCodecs[CompressionTypes.GZIP] = () => CODECS.GZIP;
  CompressionCodecs[CompressionTypes.Snappy] = () => CODECS.Snappy;
  CompressionCodecs[CompressionTypes.LZ4] = () => CODECS.LZ4;
  CompressionCodecs[CompressionTypes.ZSTD] = () => CODECS.ZSTD;
}
