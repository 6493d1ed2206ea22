import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { encoderModulePath, groupModulePath, originals } from '../../src/kafka/kafkajs.ts';

const require = createRequire(import.meta.url);
type Encoded = { buffer: Buffer };
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: object) => Encoded;
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
  RecordBatch: (b: object) => Promise<Encoded>;
};
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (b: Buffer) => { readVarInt(): number };
const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder.js') as (
  d: unknown,
  ctx: object,
) => { key: Buffer; value: Buffer; headers: Record<string, Buffer> };

/** Leaves `byte` in Node's shared allocation pool, where an unwritten byte would come from. */
function dirtyPool(byte: number): void {
  for (let i = 0; i < 64; i++) Buffer.allocUnsafe(128).fill(byte);
}

const record = {
  key: 'DE89370400440532013000',
  value: Buffer.from('an Avro value, any bytes will do'.repeat(30)), // outgrows the first 512 bytes
  headers: { 'event-type': 'AlertUpserted', 'event-id': 'e'.repeat(64), 'alert-id': 'a-1' },
};

describe('kafkajs with the pooled Encoder', () => {
  it('is the Encoder every kafkajs module gets', () => {
    const Encoder = require(encoderModulePath) as { pooled?: boolean };
    expect(Encoder.pooled).toBe(true);
  });

  it('encodes the same bytes whatever the pool held before, and they decode to the record', async () => {
    dirtyPool(0x00);
    const clean = Record(record).buffer;
    dirtyPool(0xff);
    const dirty = Record(record).buffer;
    expect(dirty.equals(clean)).toBe(true);
    const decoder = new Decoder(dirty);
    decoder.readVarInt(); // the record's length prefix
    const decoded = decodeRecord(decoder, { firstOffset: '0', firstTimestamp: '0', magicByte: 2 });
    expect(decoded.key.toString()).toBe(record.key);
    expect(decoded.value.equals(record.value)).toBe(true);
    expect(Object.fromEntries(Object.entries(decoded.headers).map(([k, v]) => [k, v.toString()]))).toEqual(
      record.headers,
    );
  });

  it('builds identical record batches (CRC included) over a dirty pool', async () => {
    const batch = async () =>
      (await RecordBatch({ firstTimestamp: 1, maxTimestamp: 1, records: [Record(record), Record(record)] }))
        .buffer;
    dirtyPool(0x00);
    const clean = await batch();
    dirtyPool(0xab);
    expect((await batch()).equals(clean)).toBe(true);
  });

  it('builds a multi-megabyte batch byte for byte as kafkajs does, with the batch sized once', async () => {
    const Encoder = require(encoderModulePath) as {
      prototype: { ensureAvailable: unknown; writeEncoderArray: unknown };
    };
    const records = Array.from({ length: 3000 }, (_, i) => ({ ...record, key: `${record.key}-${i}` }));
    const batch = async () =>
      (await RecordBatch({ firstTimestamp: 1, maxTimestamp: 1, records: records.map((r) => Record(r)) }))
        .buffer;
    const ours = await batch();
    const { ensureAvailable, writeEncoderArray } = Encoder.prototype;
    Object.assign(Encoder.prototype, {
      ensureAvailable: originals.ensureAvailable,
      writeEncoderArray: originals.writeEncoderArray,
    });
    try {
      const theirs = await batch();
      expect(ours.length).toBeGreaterThan(2 * 1024 * 1024);
      expect(ours.equals(theirs)).toBe(true);
    } finally {
      Object.assign(Encoder.prototype, { ensureAvailable, writeEncoderArray });
    }
  });
});

describe('kafkajs varlongs without Long objects', () => {
  const Encoder = require(encoderModulePath) as {
    new (): { writeVarLong(v: unknown): { buffer: Buffer } };
    sizeOfVarLong(v: unknown): number;
  };
  const reference = (value: unknown): Buffer => {
    const encoder = new Encoder();
    return (originals.writeVarLong as unknown as (this: unknown, v: unknown) => { buffer: Buffer }).call(
      encoder,
      value,
    ).buffer;
  };
  const values = [
    0,
    1,
    -1,
    63,
    64,
    -64,
    -65,
    127,
    128,
    300,
    -300,
    2 ** 20,
    -(2 ** 20),
    2 ** 30,
    2 ** 31 - 1,
    -(2 ** 31),
  ];

  it('writes the bytes and sizes of the Long-based original for every 32-bit value', () => {
    for (const value of [
      ...values,
      ...Array.from({ length: 200 }, () => Math.floor((Math.random() - 0.5) * 2 ** 32)),
    ]) {
      const expected = reference(value);
      expect(new Encoder().writeVarLong(value).buffer.equals(expected), `value ${value}`).toBe(true);
      expect(Encoder.sizeOfVarLong(value)).toBe(expected.length);
      expect(Encoder.sizeOfVarLong(value)).toBe((originals.sizeOfVarLong as (v: unknown) => number)(value));
    }
  });

  it('leaves values beyond 32 bits, and non-numbers, to the original', () => {
    for (const value of [2 ** 31, -(2 ** 31) - 1, 2 ** 40, -(2 ** 45), '12345']) {
      expect(new Encoder().writeVarLong(value).buffer.equals(reference(value))).toBe(true);
      expect(Encoder.sizeOfVarLong(value)).toBe((originals.sizeOfVarLong as (v: unknown) => number)(value));
    }
  });
});

describe('kafkajs grouping by partition', () => {
  const grouper = require(groupModulePath) as (args: object) => Record<number, unknown[]>;
  const partitioner = ({ message }: { message: { p: number } }) => message.p;
  const args = (messages: { p: number; i: number }[]) => ({
    topic: 't',
    partitionMetadata: [{}, {}, {}],
    messages,
    partitioner,
  });

  it('is linear and groups exactly as the original, keeping each partition in message order', () => {
    expect(grouper).not.toBe(originals.groupMessagesPerPartition);
    const messages = Array.from({ length: 500 }, (_, i) => ({ p: (i * 7) % 3, i }));
    const ours = grouper(args(messages));
    const theirs = (originals.groupMessagesPerPartition as (a: object) => Record<number, unknown[]>)(
      args(messages),
    );
    expect(ours).toEqual(theirs);
    expect((ours[1] as { i: number }[]).map((m) => m.i)).toEqual(
      messages.filter((m) => m.p === 1).map((m) => m.i),
    );
  });

  it('returns no partitions without partition metadata, as the original', () => {
    expect(grouper({ ...args([{ p: 0, i: 0 }]), partitionMetadata: [] })).toEqual({});
  });
});
