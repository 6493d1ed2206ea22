import { type EncoderClass, type EncoderInstance, encoderModulePath, require } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 3. Varlongs without Long objects.
 *
 * Each record's timestamp delta is written with kafkajs's `sizeOfVarLong`/`writeVarLong`, which
 * zigzag-encode through the Long class: a dozen Long objects and a `Buffer.from(array)` per record.
 *
 * A delta that fits 32 bits (always, in practice) now takes integer arithmetic, whose zigzag value
 * and bytes are the same; anything else takes the original.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs varlongs without Long objects".
 */

const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;

/** The zigzag value of a 32-bit integer, unsigned; undefined for anything the original must handle. */
function zigzag32(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < INT32_MIN || value > INT32_MAX) {
    return undefined;
  }
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

export function install(state: KafkajsFixState): void {
  installOnce(state, 'int-varlongs', () => {
    const Encoder = require(encoderModulePath) as EncoderClass;
    const sizeOfVarLong = Encoder.sizeOfVarLong.bind(Encoder);
    const writeVarLong = Encoder.prototype.writeVarLong;
    state.originals.sizeOfVarLong = sizeOfVarLong;
    state.originals.writeVarLong = writeVarLong;
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
  });
}
