import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { encoderModulePath } from '../../src/kafka/kafkajs.ts';

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
});
