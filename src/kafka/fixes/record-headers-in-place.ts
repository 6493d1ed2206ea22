import {
  type EncoderClass,
  encoderModulePath,
  type RecordEncoder,
  recordModulePath,
  require,
  swapModule,
} from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 7. Record headers written in place.
 *
 * kafkajs's record encoder builds an object, an array and an Encoder of its own per header, copied
 * into the record afterwards.
 *
 * The replacement sizes the record once and writes headers, key and value into it with the same
 * Encoder methods; a record it does not expect (a header value that is neither string nor
 * Buffer...) goes to the original.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs record headers written in place".
 */

const isText = (v: unknown): v is string | Buffer => typeof v === 'string' || Buffer.isBuffer(v);

export function install(state: KafkajsFixState): void {
  installOnce(state, 'record-headers-in-place', () => {
    const Encoder = require(encoderModulePath) as EncoderClass;
    const original = require(recordModulePath) as RecordEncoder;
    state.originals.record = original;
    /** A header's encoded size, as the original's sizeOfHeaders counts it; -1 for a value it cannot take. */
    const headerSize = (name: string, value: unknown): number => {
      if (!isText(value)) return -1;
      const nameBytes = Buffer.byteLength(name);
      const valueBytes = Buffer.byteLength(value);
      return Encoder.sizeOfVarInt(nameBytes) + nameBytes + Encoder.sizeOfVarInt(valueBytes) + valueBytes;
    };
    const record: RecordEncoder = (args) => {
      const { offsetDelta = 0, timestampDelta = 0, key, value, headers = {} } = args;
      // What the original would throw on, or encode oddly, stays the original's.
      if (
        !(key == null || isText(key)) ||
        !(value == null || isText(value)) ||
        typeof headers !== 'object' ||
        headers === null ||
        Array.isArray(headers)
      ) {
        return original(args);
      }
      const fields = headers as Record<string, unknown>;
      const names = Object.keys(fields);
      let count = 0;
      let headersSize = 0;
      for (const name of names) {
        const v = fields[name];
        for (let i = 0, n = Array.isArray(v) ? v.length : 1; i < n; i++) {
          const size = headerSize(name, Array.isArray(v) ? v[i] : v);
          if (size < 0) return original(args);
          headersSize += size;
          count++;
        }
      }
      const sizeOfBody =
        1 + // attributes
        Encoder.sizeOfVarLong(timestampDelta) +
        Encoder.sizeOfVarInt(offsetDelta) +
        Encoder.sizeOfVarIntBytes(key) +
        Encoder.sizeOfVarIntBytes(value) +
        Encoder.sizeOfVarInt(count) +
        headersSize;
      const encoder = new Encoder(Encoder.sizeOfVarInt(sizeOfBody) + sizeOfBody)
        .writeVarInt(sizeOfBody)
        .writeInt8(0)
        .writeVarLong(timestampDelta)
        .writeVarInt(offsetDelta)
        .writeVarIntBytes(key)
        .writeVarIntBytes(value)
        .writeVarInt(count);
      for (const name of names) {
        const v = fields[name];
        if (Array.isArray(v)) for (const each of v) encoder.writeVarIntString(name).writeVarIntBytes(each);
        else encoder.writeVarIntString(name).writeVarIntBytes(v);
      }
      return encoder;
    };
    swapModule(recordModulePath, record);
  });
}
