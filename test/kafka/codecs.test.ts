import { describe, expect, it } from 'vitest';
import { KafkaError } from '../../src/errors.ts';
import { CODEC_IDS, CODECS, isXerial, xerialBlocks } from '../../src/kafka/codecs.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';

const XERIAL_HEADER = Buffer.concat([
  Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]),
  Buffer.from([0, 0, 0, 1, 0, 0, 0, 1]),
]);

/** A snappy-java stream (Kafka's Java client's framing) of the given raw blocks. */
function xerial(...blocks: Buffer[]): Buffer {
  const parts: Buffer[] = [XERIAL_HEADER];
  for (const block of blocks) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(block.length);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

const text = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => `record ${i};`).join(''));

describe('compression codecs', () => {
  it("numbers the codecs as Kafka's batch attributes and kafkajs do", () => {
    const { CompressionTypes } = kafkajs;
    expect(CODEC_IDS).toEqual({
      none: CompressionTypes.None,
      gzip: CompressionTypes.GZIP,
      snappy: CompressionTypes.Snappy,
      lz4: CompressionTypes.LZ4,
      zstd: CompressionTypes.ZSTD,
    });
  });

  it.each(Object.keys(CODECS) as (keyof typeof CODECS)[])(
    '%s: decompresses what it compressed',
    async (name) => {
      const codec = CODECS[name];
      const data = text(5000);
      const compressed = await codec.compress({ buffer: data });
      expect(compressed.length).toBeLessThan(data.length);
      expect(await codec.decompress(compressed)).toEqual(data);
    },
  );

  it('Snappy: reads a snappy-java stream of several blocks as their concatenation', async () => {
    const [a, b] = [text(3000), text(10)];
    const stream = xerial(
      await CODECS.Snappy.compress({ buffer: a }),
      await CODECS.Snappy.compress({ buffer: b }),
    );
    expect(isXerial(stream)).toBe(true);
    expect(await CODECS.Snappy.decompress(stream)).toEqual(Buffer.concat([a, b]));
    expect(await CODECS.Snappy.decompress(xerial())).toEqual(Buffer.alloc(0));
  });

  it('Snappy: names a block length cut off, or a block running past the stream', async () => {
    const block = await CODECS.Snappy.compress({ buffer: text(100) });
    const whole = xerial(block);
    expect(() => xerialBlocks(whole.subarray(0, 18))).toThrow(
      'snappy-java stream cut within a block length, at byte 16 of 18',
    );
    expect(() => xerialBlocks(whole.subarray(0, whole.length - 1))).toThrow(
      `snappy-java block of ${block.length} bytes at byte 20 runs past the stream's end (${whole.length - 1} bytes)`,
    );
    await expect(CODECS.Snappy.decompress(whole.subarray(0, whole.length - 1))).rejects.toThrow(
      /^could not decompress a Snappy record batch \(\d+ bytes compressed\): snappy-java block/,
    );
  });

  it.each(Object.keys(CODECS) as (keyof typeof CODECS)[])(
    '%s: a batch that does not decompress is a KafkaError naming the codec',
    async (name) => {
      const garbage = Buffer.from('not a compressed record batch at all');
      const err = await CODECS[name].decompress(garbage).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KafkaError);
      expect((err as Error).message).toMatch(
        new RegExp(
          `^could not decompress a ${name} record batch \\(${garbage.length} bytes compressed\\): .+`,
        ),
      );
      expect((err as Error).cause).toBeInstanceOf(Error);
    },
  );
});
