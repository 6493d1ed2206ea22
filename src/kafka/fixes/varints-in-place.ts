import { type EncoderClass, type EncoderInstance, encoderModulePath, require } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 5. Varints written in place.
 *
 * kafkajs's `writeUVarInt` (and `writeVarInt` through it) pushes each byte to a fresh array and
 * appends `Buffer.from(array)`: two objects per varint, six varints per record.
 *
 * The replacement writes the same bytes straight into the Encoder's buffer.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs varints written in place".
 */

export function install(state: KafkajsFixState): void {
  installOnce(state, 'varints-in-place', () => {
    const Encoder = require(encoderModulePath) as EncoderClass;
    state.originals.writeUVarInt = Encoder.prototype.writeUVarInt;
    // The original's loop, byte for byte (its coercions included), into the buffer instead of an
    // array. Five bytes at most: after the first step the value is an unsigned 25-bit integer.
    Encoder.prototype.writeUVarInt = function writeUVarInt(this: EncoderInstance, value: unknown) {
      let v = value as number;
      this.ensureAvailable(5);
      const buf = this.buf;
      let offset = this.offset;
      while ((v & 0xffffff80) !== 0) {
        buf[offset++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      buf[offset++] = v & 0x7f;
      this.offset = offset;
      return this;
    };
  });
}
