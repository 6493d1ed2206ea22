import { describe, expect, it } from 'vitest';
import { KafkaError } from '../../src/errors.ts';
import {
  CODEC_IDS,
  CODECS,
  createCodecs,
  isXerial,
  lz4FrameBound,
  MAX_DECOMPRESSED_BYTES,
  snappyLength,
  xerialBlocks,
} from '../../src/kafka/codecs.ts';
import { fetchBudget, withDecompressionBudget } from '../../src/kafka/fetch-budget.ts';
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
    '%s: refuses a batch that decompresses past the bound, and takes one that reaches it',
    async (name) => {
      const bound = 256 * 1024;
      const codecs = createCodecs(bound);
      const codec = codecs[name];
      const atBound = await codec.compress({ buffer: Buffer.alloc(bound, 'a') });
      expect((await codec.decompress(atBound)).length).toBe(bound);
      const over = await codec.compress({ buffer: Buffer.alloc(bound + 1, 'a') });
      const err = await codec.decompress(over).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KafkaError);
      expect((err as Error).message).toMatch(
        new RegExp(
          `^could not decompress a ${name} record batch \\(${over.length} bytes compressed\\): it ` +
            `decompresses to (more than|${bound + 1} bytes, over) ${bound} bytes, fraudlink's bound on one batch$`,
        ),
      );
    },
  );

  it(`refuses a ZSTD "bomb" at ${MAX_DECOMPRESSED_BYTES} bytes by default, its few KB compressed`, async () => {
    const bomb = await CODECS.ZSTD.compress({ buffer: Buffer.alloc(MAX_DECOMPRESSED_BYTES + 1) });
    expect(bomb.length).toBeLessThan(16 * 1024);
    await expect(CODECS.ZSTD.decompress(bomb)).rejects.toThrow(
      `it decompresses to more than ${MAX_DECOMPRESSED_BYTES} bytes`,
    );
  });

  it('Snappy: reads the length a block decompresses to before decompressing it, also across snappy-java blocks', async () => {
    const data = text(3000);
    const block = await CODECS.Snappy.compress({ buffer: data });
    expect(snappyLength(block)).toBe(data.length);
    expect(() => snappyLength(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow(
      'Snappy block without a valid length',
    );
    const stream = xerial(block, block);
    await expect(createCodecs(2 * data.length - 1).Snappy.decompress(stream)).rejects.toThrow(
      `it decompresses to ${2 * data.length} bytes, over ${2 * data.length - 1} bytes`,
    );
  });

  it("LZ4: bounds a frame by its blocks: a stored block's size, the frame's block maximum for a compressed one", async () => {
    const data = text(20_000); // ~240 KB: one 256 KB block, as lz4-napi writes it
    const frame = await CODECS.LZ4.compress({ buffer: data });
    const bound = lz4FrameBound(frame) ?? 0;
    expect(bound).toBeGreaterThanOrEqual(data.length);
    expect(bound).toBeLessThan(data.length + 4 * 1024 * 1024);
    // A frame as Kafka's Java client writes it (KafkaLZ4BlockOutputStream): FLG 0x60 (version 1,
    // independent blocks), BD 0x40 (64 KB blocks), header checksum; one stored block of 5 bytes,
    // one compressed block of 3; end mark.
    const java = Buffer.concat([
      Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]),
      Buffer.from([0x05, 0x00, 0x00, 0x80]),
      Buffer.from('hello'),
      Buffer.from([0x03, 0x00, 0x00, 0x00, 0x10, 0x61, 0x00]),
      Buffer.from([0x00, 0x00, 0x00, 0x00]),
    ]);
    expect(lz4FrameBound(java)).toBe(5 + 64 * 1024);
    expect(lz4FrameBound(java.subarray(0, java.length - 4)), 'no end mark').toBe(5 + 64 * 1024);
    expect(lz4FrameBound(Buffer.concat([java, java])), 'two frames').toBe(2 * (5 + 64 * 1024));
    expect(lz4FrameBound(Buffer.concat([frame, frame])), 'two frames').toBe(2 * bound);
    expect(lz4FrameBound(Buffer.from('not a frame'))).toBeUndefined();
  });

  it("LZ4: counts a compressed block at the block maximum its frame's descriptor declares, 64 KiB to 4 MiB", async () => {
    const KB = 1024;
    /** The frame's block maximum size field (BD bits 4-6): 4 is 64 KiB, 5 256 KiB, 6 1 MiB, 7 4 MiB. */
    const blockMaxField = (frame: Buffer) => ((frame[5] as number) >> 4) & 0x07;
    // One block of alike bytes each: lz4-napi takes the smallest maximum that holds it, never 1 MiB.
    const frames = await Promise.all(
      [10 * KB, 200 * KB, 400 * KB].map((n) => CODECS.LZ4.compress({ buffer: Buffer.alloc(n, 'a') })),
    );
    // A 1 MiB frame: the 256 KiB one relabelled, with the header checksum byte the decoder accepts.
    const relabelled = Buffer.from(frames[1] as Buffer);
    relabelled[5] = 0x60;
    const decodes = (frame: Buffer) => CODECS.LZ4.decompress(frame).then(Boolean, () => false);
    for (let checksum = 0; checksum < 256 && !(await decodes(relabelled)); checksum++) {
      relabelled[6] = checksum;
    }
    const cases = [];
    for (const frame of [...frames, relabelled]) {
      const { length } = await CODECS.LZ4.decompress(frame);
      cases.push({ field: blockMaxField(frame), length, bound: lz4FrameBound(frame) });
    }
    expect(cases).toEqual([
      { field: 4, length: 10 * KB, bound: 64 * KB },
      { field: 5, length: 200 * KB, bound: 256 * KB },
      { field: 7, length: 400 * KB, bound: 4096 * KB },
      { field: 6, length: 200 * KB, bound: 1024 * KB },
    ]);
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

describe("a fetch response's decompression budget", () => {
  const KB = 1024;
  /** A batch of `bytes` alike bytes compressed by `name`, a few hundred bytes at most. */
  const batchOf = (name: keyof typeof CODECS, bytes: number) =>
    CODECS[name].compress({ buffer: Buffer.alloc(bytes, 'a') });
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: unknown) => e as Error,
    );

  it.each(Object.keys(CODECS) as (keyof typeof CODECS)[])(
    '%s: leaves a batch that would pass what the response has left for the next fetch, as kafkajs leaves a partial one',
    async (name) => {
      const batch = await batchOf(name, 400 * KB);
      // An LZ4 frame counts as its block maximum (4 MiB as lz4-napi writes it) for each compressed
      // block (lz4FrameBound): the budget leaves room for a second batch by that count.
      const budget = 400 * KB + (name === 'LZ4' ? (lz4FrameBound(batch) ?? 0) : 400 * KB);
      await withDecompressionBudget(budget, async () => {
        expect((await CODECS[name].decompress(batch)).length).toBe(400 * KB);
        expect((await CODECS[name].decompress(batch)).length).toBe(400 * KB);
        const err = await failure(CODECS[name].decompress(batch));
        // kafkajs's fetch decoders end the partition's batches at this error, and the next fetch
        // starts with this batch.
        expect(err?.name).toBe('KafkaJSPartialMessageError');
        expect(err?.message).toBe(
          `a ${name} record batch left for the next fetch: this fetch response has decompressed ` +
            `${800 * KB} of its ${budget} bytes`,
        );
        expect(fetchBudget()?.spent).toBe(800 * KB);
      });
    },
  );

  it("lets a response's first compressed batch take the bound on one batch, as a fetch returns its first batch whatever its maxBytes", async () => {
    const large = await batchOf('ZSTD', 300 * KB);
    await withDecompressionBudget(100 * KB, async () => {
      expect((await CODECS.ZSTD.decompress(large)).length).toBe(300 * KB);
      const err = await failure(CODECS.ZSTD.decompress(await batchOf('ZSTD', 1)));
      expect(err?.name).toBe('KafkaJSPartialMessageError');
    });
  });

  it('fails the fetch with a KafkaError naming codec and bound when a first batch alone passes the bound on one batch', async () => {
    const bound = 256 * KB;
    const over = await batchOf('LZ4', bound + 1);
    const err = await withDecompressionBudget(KB * KB, () =>
      failure(createCodecs(bound).LZ4.decompress(over)),
    );
    expect(err).toBeInstanceOf(KafkaError);
    expect(err?.message).toMatch(
      new RegExp(`(more than|over) ${bound} bytes, fraudlink's bound on one batch$`),
    );
  });

  it('keeps the budgets of fetch responses decoded at once apart (two brokers answering)', async () => {
    const batch = await batchOf('Snappy', 400 * KB);
    const response = () =>
      withDecompressionBudget(KB * KB, async () => {
        const sizes: number[] = [];
        for (let i = 0; i < 2; i++) {
          sizes.push((await CODECS.Snappy.decompress(batch)).length);
          await new Promise((resolve) => setImmediate(resolve));
        }
        return sizes;
      });
    expect(await Promise.all([response(), response()])).toEqual([
      [400 * KB, 400 * KB],
      [400 * KB, 400 * KB],
    ]);
  });

  it('bounds each batch alone outside a fetch response', async () => {
    const batch = await batchOf('GZIP', 400 * KB);
    expect(fetchBudget()).toBeUndefined();
    for (let i = 0; i < 4; i++) expect((await CODECS.GZIP.decompress(batch)).length).toBe(400 * KB);
  });
});
