import { createRequire } from 'node:module';
import { kafkajsPath } from '../kafkajs-path.ts';

/**
 * Requests of flexible versions for kafkajs, which speaks none of the versions these files add: the
 * kafkajs internals they use, and what they share.
 *
 * Every response here is of a version past KIP-219: the broker answers before throttling and the
 * client holds back itself, so `throttleTime` is 0 and the broker's goes to `clientSideThrottleTime`
 * (kafkajs's RequestQueue reads it), as in kafkajs's own decoders of such versions.
 *
 * Flexible-version helpers. kafkajs writes a flexible request header's tagged fields (none) as the
 * first byte of the payload and reads a flexible response header's as the first of the body, the
 * way its ListPartitionReassignments does. Its `readTaggedFields` reads a field's size as a compact
 * length (one short), so it is not used: `readTags` skips each field by its size.
 */

const require = createRequire(import.meta.url);

export interface Encoder {
  writeInt8(v: number): Encoder;
  writeInt16(v: number): Encoder;
  writeInt32(v: number): Encoder;
  writeInt64(v: unknown): Encoder;
  writeBoolean(v: boolean): Encoder;
  writeUVarInt(v: number): Encoder;
  writeUVarIntString(v: string | null): Encoder;
  writeUVarIntArray(v: Encoder[], type: 'object'): Encoder;
  writeEncoder(v: Encoder): Encoder;
  size(): number;
}
export type EncoderClass = new () => Encoder;

export interface Decoder {
  offset: number;
  readInt8(): number;
  readInt16(): number;
  readInt32(): number;
  readInt64(): { toString(): string };
  readBoolean(): boolean;
  readUVarInt(): number;
  readUVarIntString(): string | null;
  readUVarIntArray<T>(reader: (d: Decoder) => T): T[] | null;
}
export type DecoderClass = new (buffer: Buffer) => Decoder;

export interface ProtocolError extends Error {
  type?: string;
}
interface ErrorModule {
  failure(code: number): boolean;
  createErrorFromCode(code: number): ProtocolError;
}

export interface ApiVersion {
  minVersion: number;
  maxVersion: number;
}
/** kafkajs's map of apiKey → versions the broker offers (what `broker.apiVersions()` returns). */
export type Versions = Record<number, ApiVersion | undefined>;

export interface ProtocolRequest {
  request: {
    apiKey: number;
    apiVersion: number;
    apiName: string;
    expectResponse?: () => boolean;
    encode(): Promise<Encoder> | Encoder;
  };
  response: { decode(raw: Buffer): Promise<unknown>; parse(data: unknown): Promise<unknown> };
  logResponseError?: boolean;
  requestTimeout?: number;
}

/** Whether the broker with these versions offers this version of an API. */
export function offers(versions: Versions | null | undefined, apiKey: number, version: number): boolean {
  const v = versions?.[apiKey];
  return v !== undefined && v.minVersion <= version && version <= v.maxVersion;
}

export const apiKeys = require(kafkajsPath('protocol/requests/apiKeys.js')) as Record<string, number>;
const errors = require(kafkajsPath('protocol/error.js')) as ErrorModule;

export type RecordFactory = (args: {
  key?: unknown;
  value?: unknown;
  headers?: unknown;
  offsetDelta: number;
  timestampDelta: number;
}) => Encoder;
export type RecordBatchFactory = (args: Record<string, unknown>) => Promise<Encoder>;

interface Codec {
  Encoder: EncoderClass;
  Decoder: DecoderClass;
  Record: RecordFactory;
  RecordBatch: RecordBatchFactory;
}
let codec: Codec | undefined;
/**
 * kafkajs's encoding modules, taken at first use: by then the fixes are in the CommonJS cache
 * (this module is imported before they are installed).
 */
export function kafkajsCodec(): Codec {
  codec ??= {
    Encoder: require(kafkajsPath('protocol/encoder.js')) as EncoderClass,
    Decoder: require(kafkajsPath('protocol/decoder.js')) as DecoderClass,
    Record: require(kafkajsPath('protocol/recordBatch/record/v0/index.js')) as RecordFactory,
    RecordBatch: (
      require(kafkajsPath('protocol/recordBatch/v0/index.js')) as { RecordBatch: RecordBatchFactory }
    ).RecordBatch,
  };
  return codec;
}
export const Encoder = () => kafkajsCodec().Encoder;
export const Decoder = () => kafkajsCodec().Decoder;

export const NO_TAGS = 0;

export function readTags(decoder: Decoder, onTag?: (tag: number, field: Decoder) => void): void {
  const count = decoder.readUVarInt();
  for (let i = 0; i < count; i++) {
    const tag = decoder.readUVarInt();
    const size = decoder.readUVarInt();
    const end = decoder.offset + size;
    if (onTag) onTag(tag, decoder);
    decoder.offset = end;
  }
}

export function failOn(code: number): void {
  if (errors.failure(code)) throw errors.createErrorFromCode(code);
}

/**
 * A request of a flexible version as kafkajs's connection sends it: `body` after the request
 * header's empty tagged fields, and `read` on the response after its header's; the response fails
 * with the first error code `errorCodes` finds.
 */
export function flexibleRequest<T>(spec: {
  apiName: string;
  apiVersion: number;
  body(e: Encoder): Encoder | Promise<Encoder>;
  read(d: Decoder): T;
  errorCodes(result: T): Iterable<number>;
  expectResponse?: () => boolean;
}): ProtocolRequest {
  return {
    request: {
      apiKey: apiKeys[spec.apiName] as number,
      apiVersion: spec.apiVersion,
      apiName: spec.apiName,
      ...(spec.expectResponse ? { expectResponse: spec.expectResponse } : {}),
      encode: () => spec.body(new (Encoder())().writeUVarInt(NO_TAGS)),
    },
    response: {
      async decode(raw) {
        const d = new (Decoder())(raw);
        readTags(d);
        const result = spec.read(d);
        readTags(d);
        return result;
      },
      async parse(data) {
        for (const code of spec.errorCodes(data as T)) failOn(code);
        return data;
      },
    },
  };
}

/** Topics as a flexible request lists them: name, its partitions' entries (`entry`), no tags. */
export function topicEntries<P>(
  topics: { topic: string; partitions: P[] }[],
  entry: (partition: P, e: Encoder) => Encoder,
): Encoder[] {
  const E = Encoder();
  return topics.map(({ topic, partitions }) =>
    new E()
      .writeUVarIntString(topic)
      .writeUVarIntArray(
        partitions.map((p) => entry(p, new E())),
        'object',
      )
      .writeUVarInt(NO_TAGS),
  );
}
