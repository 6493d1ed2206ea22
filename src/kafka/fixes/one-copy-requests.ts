import {
  type EncoderClass,
  type EncoderInstance,
  encodedLength,
  encoderModulePath,
  isEncoder,
  type RequestFramer,
  requestModulePath,
  require,
  swapModule,
} from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 8. Large requests copied once less.
 *
 * kafkajs builds a produce request by layers (record batch, partition, topic, request, frame), each
 * copying the layer below into an Encoder of its own; `writeArray` of Encoders (the topic and
 * request layers) grows its buffer by steps, a copy per step, and the frame copies the whole
 * request twice (header plus payload, then size plus both).
 *
 * Now `writeArray` sizes its buffer once for a list of Encoders, and the frame copies the payload
 * once. At the connector's 5,000-record transactions (~1.7 MB a request) that is, by count, ~6 MB
 * less of mmapped buffers per transaction, each resident until a scavenge finds it dead.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs large requests copied once less".
 */

export function install(state: KafkajsFixState): void {
  installOnce(state, 'one-copy-requests', () => {
    const Encoder = require(encoderModulePath) as EncoderClass;
    const writeArray = Encoder.prototype.writeArray;
    state.originals.writeArray = writeArray;
    // A list of Encoders (a request's topics, a topic's partitions) is written as by the original,
    // into a buffer grown once to hold them all; anything else goes to the original as it is.
    Encoder.prototype.writeArray = function writeSizedArray(
      this: EncoderInstance,
      array: unknown[],
      type?: string,
      length?: number,
    ) {
      if (type === undefined && Array.isArray(array) && array.every(isEncoder)) {
        this.ensureAvailable(4 + encodedLength(array)); // the count, then the Encoders
      }
      return writeArray.call(this, array, type, length);
    };
    state.originals.frameRequest = require(requestModulePath) as RequestFramer;
    // The original's bytes: size, api key, version, correlation id, client id, payload. The payload
    // is copied once, into a buffer that a payload over 64 KiB grows to exactly (the pooled
    // encoder's ensureAvailable, fix 2).
    const frameRequest: RequestFramer = async ({
      correlationId,
      clientId,
      request: { apiKey, apiVersion, encode },
    }) => {
      const payload = await encode();
      const header = new Encoder()
        .writeInt16(apiKey)
        .writeInt16(apiVersion)
        .writeInt32(correlationId)
        .writeString(clientId);
      return new Encoder()
        .writeInt32(header.size() + payload.size())
        .writeEncoder(header)
        .writeEncoder(payload);
    };
    swapModule(requestModulePath, frameRequest);
  });
}
