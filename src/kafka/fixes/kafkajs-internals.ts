import { createRequire } from 'node:module';
import { kafkajsPath } from '../kafkajs-path.ts';

/** The parts of kafkajs's internals the fixes replace or call, and where kafkajs keeps them. */

export const require = createRequire(import.meta.url);

export const encoderModulePath = kafkajsPath('protocol/encoder.js');
export const groupModulePath = kafkajsPath('producer/groupMessagesPerPartition.js');
export const abortFilterModulePath = kafkajsPath('consumer/filterAbortedMessages.js');
export const murmur2ModulePath = kafkajsPath('producer/partitioners/default/murmur2.js');
export const partitionerModulePath = kafkajsPath('producer/partitioners/legacy/partitioner.js');
export const recordModulePath = kafkajsPath('protocol/recordBatch/record/v0/index.js');
export const requestModulePath = kafkajsPath('protocol/request.js');
export const recordDecoderModulePath = kafkajsPath('protocol/recordBatch/record/v0/decoder.js');
export const requestQueueModulePath = kafkajsPath('network/requestQueue/index.js');
export const errorModulePath = kafkajsPath('protocol/error.js');
export const brokerModulePath = kafkajsPath('broker/index.js');

/** Replaces what `require(path)` returns from now on, for every module that requires it later. */
export function swapModule(path: string, exports: unknown): void {
  (require.cache[path] as NodeJS.Module).exports = exports;
}

export interface EncoderClass {
  new (initialSize?: number): EncoderInstance;
  prototype: EncoderInstance;
  nextPowerOfTwo(value: number): number;
  sizeOfVarLong(value: unknown): number;
  sizeOfVarInt(value: unknown): number;
  sizeOfVarIntBytes(value: unknown): number;
}
export interface EncoderInstance {
  buf: Buffer;
  offset: number;
  /** The bytes written so far (a view). */
  readonly buffer: Buffer;
  ensureAvailable(length: number): void;
  writeEncoderArray(value: EncoderInstance[]): EncoderInstance;
  writeVarLong(value: unknown): EncoderInstance;
  writeUVarInt(value: unknown): EncoderInstance;
  writeVarInt(value: unknown): EncoderInstance;
  writeInt8(value: number): EncoderInstance;
  writeVarIntString(value: string): EncoderInstance;
  writeVarIntBytes(value: unknown): EncoderInstance;
  writeArray(array: unknown[], type?: string, length?: number): EncoderInstance;
  writeInt16(value: number): EncoderInstance;
  writeInt32(value: number): EncoderInstance;
  writeString(value: string): EncoderInstance;
  writeEncoder(value: EncoderInstance): EncoderInstance;
  size(): number;
}

export const isEncoder = (v: unknown): v is EncoderInstance =>
  typeof v === 'object' && v !== null && Buffer.isBuffer((v as EncoderInstance).buf);

/** The bytes a list of Encoders holds. */
export function encodedLength(encoders: readonly EncoderInstance[]): number {
  let total = 0;
  for (const e of encoders) total += e.offset;
  return total;
}

/** kafkajs's request framing (protocol/request.js): size, header and the request's own payload. */
export type RequestFramer = (args: {
  correlationId: number;
  clientId: string;
  request: { apiKey: number; apiVersion: number; encode(): Promise<EncoderInstance> | EncoderInstance };
}) => Promise<EncoderInstance>;

/** kafkajs's record encoder (protocol/recordBatch/record/v0): a record as an Encoder. */
export interface RecordArgs {
  offsetDelta?: number;
  timestampDelta?: unknown;
  key?: unknown;
  value?: unknown;
  headers?: unknown;
}
export type RecordEncoder = (record: RecordArgs) => EncoderInstance;

export interface PartitionMetadata {
  partitionId: number;
  leader: number;
}
/** kafkajs's partitioner factory (producer/partitioners/legacy/partitioner.js), given a hash. */
export type PartitionerFactory = (
  hash: (key: unknown) => number,
) => () => (args: {
  topic: string;
  partitionMetadata: PartitionMetadata[];
  message: { key?: unknown; partition?: number | null };
}) => number;

/** kafkajs's Decoder (protocol/decoder.js), as the record decoder uses it. */
export interface DecoderInstance {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readVarInt(): number;
  readVarIntBytes(): Buffer | null;
  readVarIntArray<T>(decode: (decoder: DecoderInstance) => T): T[];
}
/** What a fetched record batch tells each of its records (protocol/recordBatch/v0/decoder.js). */
export interface RecordBatchContext {
  firstOffset?: string;
  firstTimestamp?: string;
  maxTimestamp?: string;
  magicByte?: number;
  isControlBatch?: boolean;
  timestampType?: number;
}
/** kafkajs's record decoder (protocol/recordBatch/record/v0/decoder.js). */
export type RecordDecoder = (decoder: DecoderInstance, batchContext?: RecordBatchContext) => unknown;

/** kafkajs's protocol errors module (protocol/error.js). */
export interface ErrorModule {
  errorCodes: { type: string; code: number; retriable: boolean; message: string }[];
  failure(code: number): boolean;
  createErrorFromCode(code: number): Error & { type?: string };
}

/** kafkajs's private `sendRequest` of a Broker: one request through its connection pool. */
export function sendRequestOf(Broker: { prototype: object }): symbol {
  const symbol = Object.getOwnPropertySymbols(Broker.prototype).find(
    (s) => s.description === 'private:Broker:sendRequest',
  );
  if (!symbol)
    throw new Error('kafkajs Broker has no private:Broker:sendRequest: a kafkajs this code does not know');
  return symbol;
}

/** Sends a request through a Broker's connection pool, as the Broker's own methods do. */
export function senderOf<R>(Broker: { prototype: object }): (broker: object, request: R) => Promise<unknown> {
  const sendSymbol = sendRequestOf(Broker);
  return (broker, request) =>
    (
      (broker as Record<symbol, (request: R) => Promise<unknown>>)[sendSymbol] as (
        request: R,
      ) => Promise<unknown>
    ).call(broker, request);
}
