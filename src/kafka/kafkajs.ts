import { createRequire } from 'node:module';
import type * as Kafkajs from 'kafkajs';

/**
 * kafkajs, loaded once through here so three fixes to its per-record hot path are in place before
 * any of its modules load (kafkajs has had no release since 2023). Each leaves the bytes on the wire
 * unchanged (test/kafka/kafkajs-fixes.test.ts compares them with the original code's).
 *
 * 1. Pooled encoder buffers. kafkajs builds every record with `new Encoder()`, whose constructor takes `Buffer.alloc(512)`: a
 * zero-filled, unpooled ArrayBuffer of its own, four per record with three headers, each grown by
 * another `Buffer.alloc` when it fills. The replacement takes `Buffer.allocUnsafe` instead: slices of
 * Node's shared 8 KB pool below 4 KB, no zero-filling. An Encoder only ever hands out
 * `buf.slice(0, offset)`, bytes it wrote itself, so no uninitialised byte can leave it. Measured on
 * the connector: 11% less CPU on its Kafka thread, and far fewer short-lived ArrayBuffers.
 *
 *
 * 2. Varlongs without Long objects. Each record's timestamp delta is written with
 * `sizeOfVarLong`/`writeVarLong`, which zigzag-encode through the Long class (a dozen Long objects
 * and a `Buffer.from(array)` per record). A delta that fits 32 bits (always, in practice) now takes
 * integer arithmetic, whose zigzag value and bytes are the same; anything else takes the original.
 *
 * 3. Linear grouping by partition. `groupMessagesPerPartition` appended with
 * `[...current, message]`, copying the partition's array for every message: quadratic, 8% of the
 * connector's Kafka thread at 5,000-record transactions. The replacement pushes, in the same order.
 *
 * The swaps replace a module's export in the CommonJS cache, so the modules that `require` it
 * afterwards (all of kafkajs, loaded by the `require('kafkajs')` below) get it; the class itself is
 * unchanged, so `instanceof` and the static helpers keep working.
 */

const require = createRequire(import.meta.url);

interface EncoderClass {
  new (initialSize?: number): EncoderInstance;
  prototype: EncoderInstance;
  nextPowerOfTwo(value: number): number;
  sizeOfVarLong(value: unknown): number;
}
interface EncoderInstance {
  buf: Buffer;
  offset: number;
  ensureAvailable(length: number): void;
  writeVarLong(value: unknown): EncoderInstance;
}

type Grouper = (args: {
  topic: string;
  partitionMetadata: unknown[];
  messages: unknown[];
  partitioner: (args: { topic: string; partitionMetadata: unknown[]; message: unknown }) => number;
}) => Record<number, unknown[]>;

export const encoderModulePath = require.resolve('kafkajs/src/protocol/encoder.js');
export const groupModulePath = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');

interface Originals {
  sizeOfVarLong?: (value: unknown) => number;
  writeVarLong?: (this: EncoderInstance, value: unknown) => EncoderInstance;
  groupMessagesPerPartition?: Grouper;
}

/**
 * kafkajs's own implementations, kept for the tests that compare output with them. Held per process,
 * like the CommonJS cache: a second evaluation of this module (test runners) must not wrap twice.
 */
const shared = globalThis as Record<symbol, Originals | undefined>;
const ORIGINALS = Symbol.for('fraudlink.kafkajs.originals');
shared[ORIGINALS] ??= {};
export const originals = shared[ORIGINALS] as Originals;

const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;

/** The zigzag value of a 32-bit integer, unsigned; undefined for anything the original must handle. */
function zigzag32(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < INT32_MIN || value > INT32_MAX) {
    return undefined;
  }
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

function installPooledEncoder(): void {
  const cached = require.cache[encoderModulePath];
  if (cached && (cached.exports as { pooled?: boolean }).pooled) return;
  const Encoder = require(encoderModulePath) as EncoderClass;
  // A function constructor: `new` returns the object it builds, so the original constructor and
  // its Buffer.alloc never run.
  function PooledEncoder(initialSize = 511): EncoderInstance {
    const encoder = Object.create(Encoder.prototype) as EncoderInstance;
    encoder.buf = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(initialSize));
    encoder.offset = 0;
    return encoder;
  }
  PooledEncoder.prototype = Encoder.prototype;
  Object.setPrototypeOf(PooledEncoder, Encoder); // the static helpers (sizeOfVarInt...)
  Object.defineProperty(PooledEncoder, 'pooled', { value: true });
  Encoder.prototype.ensureAvailable = function ensureAvailable(this: EncoderInstance, length: number) {
    if (this.offset + length > this.buf.length) {
      const grown = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(this.offset + length));
      this.buf.copy(grown, 0, 0, this.offset);
      this.buf = grown;
    }
  };
  (require.cache[encoderModulePath] as NodeJS.Module).exports = PooledEncoder;
}

function installIntVarLong(): void {
  const Encoder = require(encoderModulePath) as EncoderClass;
  if (originals.sizeOfVarLong) return;
  const sizeOfVarLong = Encoder.sizeOfVarLong.bind(Encoder);
  const writeVarLong = Encoder.prototype.writeVarLong;
  originals.sizeOfVarLong = sizeOfVarLong;
  originals.writeVarLong = writeVarLong;
  Encoder.sizeOfVarLong = (value: unknown): number => {
    let z = zigzag32(value);
    if (z === undefined) return sizeOfVarLong(value);
    let bytes = 1;
    while (z >= 0x80) {
      bytes++;
      z >>>= 7;
    }
    return bytes;
  };
  Encoder.prototype.writeVarLong = function writeIntVarLong(this: EncoderInstance, value: unknown) {
    let z = zigzag32(value);
    if (z === undefined) return writeVarLong.call(this, value);
    this.ensureAvailable(5);
    const buf = this.buf;
    let offset = this.offset;
    while (z >= 0x80) {
      buf[offset++] = (z & 0x7f) | 0x80;
      z >>>= 7;
    }
    buf[offset++] = z;
    this.offset = offset;
    return this;
  };
}

function installLinearGrouping(): void {
  if (originals.groupMessagesPerPartition) return;
  originals.groupMessagesPerPartition = require(groupModulePath) as Grouper;
  const grouped: Grouper = ({ topic, partitionMetadata, messages, partitioner }) => {
    const result: Record<number, unknown[]> = {};
    if (partitionMetadata.length === 0) return result;
    for (const message of messages) {
      const partition = partitioner({ topic, partitionMetadata, message });
      const list = result[partition];
      if (list) list.push(message);
      else result[partition] = [message];
    }
    return result;
  };
  (require.cache[groupModulePath] as NodeJS.Module).exports = grouped;
}

installPooledEncoder();
installIntVarLong();
installLinearGrouping();

const kafkajs = require('kafkajs') as typeof Kafkajs;
export default kafkajs;
