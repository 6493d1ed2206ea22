import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { kafkajsPath } from '../../src/kafka/kafkajs-path.ts';
import { recordBatchDecoderModulePath, recordBatchHeaderAt } from '../../src/kafka/unreadable-batches.ts';

const require = createRequire(import.meta.url);
const { CompressionTypes } = kafkajs;
type Encoded = { buffer: Buffer };
const RecordBatch = (
  require(kafkajsPath('protocol/recordBatch/v0/index.js')) as {
    RecordBatch: (args: Record<string, unknown>) => Promise<Encoded>;
  }
).RecordBatch;
const Record = require(kafkajsPath('protocol/recordBatch/record/v0/index.js')) as (
  args: Record<string, unknown>,
) => unknown;
const Decoder = require(kafkajsPath('protocol/decoder.js')) as new (buffer: Buffer) => unknown;
const decodeBatch = require(recordBatchDecoderModulePath) as (decoder: unknown) => Promise<{
  records: { offset: string; key: Buffer | null; unreadableBatch?: Record<string, unknown> }[];
}>;
const decodeMessages = require(kafkajsPath('protocol/requests/fetch/v4/decodeMessages.js')) as (
  decoder: unknown,
) => Promise<{ offset: string; key: Buffer | null; unreadableBatch?: Record<string, unknown> }[]>;

/** A record batch of `count` records (keys k0, k1...) of `value`, from `firstOffset`. */
async function batch(
  firstOffset: number,
  count: number,
  value: Buffer,
  compression: number,
): Promise<Buffer> {
  const records = Array.from({ length: count }, (_, i) =>
    Record({ offsetDelta: i, key: Buffer.from(`k${i}`), value }),
  );
  const encoded = await RecordBatch({
    compression,
    firstOffset: BigInt(firstOffset).toString(),
    lastOffsetDelta: count - 1,
    records,
  });
  return encoded.buffer;
}

/** The records section of a batch: after the 61 bytes of its header. */
const RECORDS_AT = 61;

describe('record batches that cannot be read', () => {
  it('reads a batch header without decompressing', async () => {
    const bytes = await batch(40, 3, Buffer.from('v'), CompressionTypes.ZSTD);
    expect(recordBatchHeaderAt(bytes, 0)).toMatchObject({
      firstOffset: '40',
      lastOffset: '42',
      length: bytes.length - 12,
      attributes: CompressionTypes.ZSTD,
    });
    expect(recordBatchHeaderAt(bytes.subarray(0, 60), 0)).toBeUndefined();
  });

  it('decodes a readable compressed batch as kafkajs does', async () => {
    const bytes = await batch(5, 2, Buffer.from('v'), CompressionTypes.ZSTD);
    const { records } = await decodeBatch(new Decoder(bytes));
    expect(records.map((r) => [r.offset, r.key?.toString()])).toEqual([
      ['5', 'k0'],
      ['6', 'k1'],
    ]);
  });

  it('turns a batch whose compressed bytes are corrupt into one record at its last offset', async () => {
    const bytes = await batch(100, 3, Buffer.from('value'), CompressionTypes.ZSTD);
    bytes.fill(0xab, RECORDS_AT);
    const { records } = await decodeBatch(new Decoder(bytes));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ offset: '102', key: null, value: null, headers: {} });
    expect(records[0]?.unreadableBatch).toEqual({
      firstOffset: '100',
      lastOffset: '102',
      codec: 'zstd',
      reason: expect.stringMatching(/^could not decompress a ZSTD record batch \(\d+ bytes compressed\)/),
      bytes: bytes.length - RECORDS_AT,
      data: bytes.subarray(RECORDS_AT),
    });
  });

  it('turns a batch that would decompress past the bound into one record', async () => {
    const bomb = await batch(0, 2, Buffer.alloc(40 * 1024 * 1024), CompressionTypes.ZSTD);
    expect(bomb.length).toBeLessThan(100_000);
    const { records } = await decodeBatch(new Decoder(bomb));
    expect(records.map((r) => r.offset)).toEqual(['1']);
    expect(records[0]?.unreadableBatch).toMatchObject({
      codec: 'zstd',
      reason: expect.stringMatching(/decompresses to more than 67108864 bytes/),
    });
  });

  it('turns a batch naming a codec Kafka does not define into one record', async () => {
    const bytes = await batch(7, 1, Buffer.from('value'), CompressionTypes.ZSTD);
    bytes[22] = ((bytes[22] as number) & ~0x07) | 0x06; // the attributes' low byte
    const { records } = await decodeBatch(new Decoder(bytes));
    expect(records[0]?.unreadableBatch).toMatchObject({
      firstOffset: '7',
      lastOffset: '7',
      codec: 'codec 6',
    });
  });

  it('leaves a batch cut by the end of the fetch for the next fetch', async () => {
    const bytes = await batch(0, 2, Buffer.from('value'), CompressionTypes.ZSTD);
    await expect(decodeBatch(new Decoder(bytes.subarray(0, bytes.length - 3)))).rejects.toMatchObject({
      name: 'KafkaJSPartialMessageError',
    });
  });

  it("keeps a fetch response's batches after an unreadable one", async () => {
    const corrupt = await batch(0, 2, Buffer.from('value'), CompressionTypes.ZSTD);
    corrupt.fill(0xab, RECORDS_AT);
    const plain = await batch(2, 2, Buffer.from('after'), CompressionTypes.None);
    const gzipped = await batch(4, 1, Buffer.from('gz'), CompressionTypes.GZIP);
    const messages = Buffer.concat([corrupt, plain, gzipped]);
    const size = Buffer.alloc(4);
    size.writeInt32BE(messages.length);
    const records = await decodeMessages(new Decoder(Buffer.concat([size, messages])));
    expect(
      records.map((r) => [r.offset, r.key?.toString() ?? null, r.unreadableBatch !== undefined]),
    ).toEqual([
      ['1', null, true],
      ['2', 'k0', false],
      ['3', 'k1', false],
      ['4', 'k0', false],
    ]);
  });
});
