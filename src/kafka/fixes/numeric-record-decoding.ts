import { kafkajsPath } from '../kafkajs-path.ts';
import {
  type DecoderInstance,
  type RecordDecoder,
  recordDecoderModulePath,
  require,
  swapModule,
} from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 9. Fetched records decoded with numbers.
 *
 * kafkajs's record decoder turns each record's offset and timestamp into `Long`s, parsing the
 * batch's base offset from its decimal string for every record, and builds the headers object anew
 * for each header.
 *
 * Here both bases are parsed once per batch and added as numbers; a record whose values leave the
 * safe-integer range, or a header named `__proto__`, is decoded by the original.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs fetched records decoded with numbers".
 */

/** A batch's base offset or timestamp (a decimal string) as a number: parsed once per batch, not per record. */
function safeIntegerCache(): (text: string | undefined) => number | undefined {
  let lastText: string | undefined;
  let last: number | undefined;
  return (text) => {
    if (text !== lastText) {
      lastText = text;
      const n = Number(text);
      last = text !== undefined && text !== '' && Number.isSafeInteger(n) ? n : undefined;
    }
    return last;
  };
}

/**
 * A zigzag varlong read as a number, advancing the decoder; undefined (the decoder left where it was)
 * past 7 bytes (49 bits), which the original's Long arithmetic handles.
 */
function readSmallVarLong(decoder: DecoderInstance): number | undefined {
  const { buffer } = decoder;
  let offset = decoder.offset;
  let unsigned = 0;
  let scale = 1;
  for (let i = 0; i < 7; i++) {
    const byte = buffer[offset++];
    if (byte === undefined) return undefined;
    unsigned += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      decoder.offset = offset;
      return unsigned % 2 === 0 ? unsigned / 2 : -(unsigned + 1) / 2;
    }
    scale *= 0x80;
  }
  return undefined;
}

function installNumericRecordDecoding(state: KafkajsFixState): void {
  const original = require(recordDecoderModulePath) as RecordDecoder;
  state.originals.decodeRecord = original;
  const HeaderDecoder = require(kafkajsPath('protocol/recordBatch/header/v0/decoder.js')) as (
    decoder: DecoderInstance,
  ) => { key: string; value: Buffer | null };
  const TimestampTypes = require(kafkajsPath('protocol/timestampTypes.js')) as {
    LOG_APPEND_TIME: number;
  };
  const baseOffset = safeIntegerCache();
  const baseTimestamp = safeIntegerCache();
  const decodeRecord: RecordDecoder = (decoder, batchContext = {}) => {
    const start = decoder.offset;
    const {
      firstOffset,
      firstTimestamp,
      magicByte,
      isControlBatch = false,
      timestampType,
      maxTimestamp,
    } = batchContext;
    const fallback = () => {
      decoder.offset = start;
      return original(decoder, batchContext);
    };
    const attributes = decoder.readInt8();
    const timestampDelta = readSmallVarLong(decoder);
    if (timestampDelta === undefined) return fallback();
    let timestamp: string;
    if (timestampType === TimestampTypes.LOG_APPEND_TIME && maxTimestamp) {
      timestamp = maxTimestamp;
    } else {
      const base = baseTimestamp(firstTimestamp);
      if (base === undefined || !Number.isSafeInteger(base + timestampDelta)) return fallback();
      timestamp = String(base + timestampDelta);
    }
    const offsetDelta = decoder.readVarInt();
    const base = baseOffset(firstOffset);
    if (base === undefined || !Number.isSafeInteger(base + offsetDelta)) return fallback();
    const offset = String(base + offsetDelta);
    const key = decoder.readVarIntBytes();
    const value = decoder.readVarIntBytes();
    const headers: Record<string, Buffer | null | (Buffer | null)[]> = {};
    for (const header of decoder.readVarIntArray(HeaderDecoder)) {
      if (header.key === '__proto__') return fallback();
      const seen = headers[header.key];
      headers[header.key] =
        seen === undefined
          ? header.value
          : Array.isArray(seen)
            ? seen.concat([header.value])
            : [seen, header.value];
    }
    return {
      magicByte,
      attributes,
      timestamp,
      offset,
      key,
      value,
      headers,
      isControlRecord: isControlBatch,
      batchContext,
    };
  };
  swapModule(recordDecoderModulePath, decodeRecord);
}

export function install(state: KafkajsFixState): void {
  installOnce(state, 'numeric-record-decoding', () => installNumericRecordDecoding(state));
}
