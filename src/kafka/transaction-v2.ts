import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { kafkajsPath } from './kafkajs-path.ts';
import type { GroupMembership } from './types.ts';

/**
 * Kafka's transaction protocol v2 (KIP-890 part 2, Kafka 4.0+) for kafkajs, which speaks only v1.
 *
 * On v1 a transaction costs the producer five requests in a row: AddPartitionsToTxn, Produce,
 * AddOffsetsToTxn, TxnOffsetCommit, EndTxn. On v2 the broker enrols a partition in the transaction
 * when a Produce (v12+) or a TxnOffsetCommit (v5+) reaches it, so the two Add requests go, and
 * EndTxn (v5+) ends the transaction with the producer epoch one higher, which its response
 * carries: three requests. That is what Kafka's Java client does since 4.0 when the cluster
 * finalizes `transaction.version` 2 (the default of a cluster formatted by 4.0 or later).
 *
 * kafkajs learns no features from its ApiVersions v2, so ApiVersions v3 is added, and its
 * finalized feature levels ride on the versions object kafkajs hands to every broker
 * (`finalizedFeatureLevel`). A transactional Produce goes out as v12 where the cluster finalizes
 * `transaction.version` 2 and the broker offers every v2 request (`transactionV2Available`); every
 * other request is kafkajs's own.
 *
 * The transaction manager (eos-manager.ts, in place of kafkajs's eosManager) takes v2 per
 * transaction under the same condition, decided at the transaction's first request and kept to its
 * end; otherwise it is kafkajs's v1 flow, unchanged.
 */

const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// kafkajs internals used here

interface Encoder {
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
type EncoderClass = new () => Encoder;

interface Decoder {
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
type DecoderClass = new (buffer: Buffer) => Decoder;

interface ProtocolError extends Error {
  type?: string;
}
interface ErrorModule {
  failure(code: number): boolean;
  createErrorFromCode(code: number): ProtocolError;
}

interface ApiVersion {
  minVersion: number;
  maxVersion: number;
}
/** kafkajs's map of apiKey → versions the broker offers (what `broker.apiVersions()` returns). */
export type Versions = Record<number, ApiVersion | undefined> & { [FEATURES]?: Map<string, number> };

interface ProtocolRequest {
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

const apiKeys = require(kafkajsPath('protocol/requests/apiKeys.js')) as Record<string, number>;
const errors = require(kafkajsPath('protocol/error.js')) as ErrorModule;

interface Codec {
  Encoder: EncoderClass;
  Decoder: DecoderClass;
  Record: RecordFactory;
  RecordBatch: RecordBatchFactory;
}
let codec: Codec | undefined;
/**
 * kafkajs's encoding modules, taken at first use: by then kafkajs.ts has swapped its fixes into the
 * CommonJS cache (this module is imported before they are installed).
 */
function kafkajsCodec(): Codec {
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
const Encoder = () => kafkajsCodec().Encoder;
const Decoder = () => kafkajsCodec().Decoder;

/** Where the cluster's finalized feature levels ride on a kafkajs versions object. */
const FEATURES = Symbol.for('fraudlink.kafkajs.finalizedFeatures');

const TRANSACTION_VERSION_FEATURE = 'transaction.version';

/** The level at which the cluster finalizes a feature, 0 when it does not or the broker says nothing. */
export function finalizedFeatureLevel(versions: Versions | null | undefined, feature: string): number {
  return versions?.[FEATURES]?.get(feature) ?? 0;
}

function offers(versions: Versions | null | undefined, apiKey: number, version: number): boolean {
  const v = versions?.[apiKey];
  return v !== undefined && v.minVersion <= version && version <= v.maxVersion;
}

/**
 * Transactional ids kept on the v1 protocol whatever the cluster offers. On v2, when a producer's
 * next transaction follows its last at once, the broker's enrolment of the first partition meets
 * the last one's markers still being written (CONCURRENT_TRANSACTIONS) and the broker retries it
 * after `add.partitions.to.txn.retry.backoff.ms` (20 ms by default, a static broker setting), where
 * kafkajs's own retry on v1 waits 5 ms (producer.ts). Held per process, like the CommonJS cache.
 */
const V1_IDS = Symbol.for('fraudlink.kafkajs.transactionV1Ids');
const sharedState = globalThis as Record<symbol, Set<string> | undefined>;
sharedState[V1_IDS] ??= new Set();
const keptOnV1 = sharedState[V1_IDS] as Set<string>;

/** Keeps this transactional id's transactions on the v1 protocol until `releaseTransactionProtocol`. */
export function keepTransactionProtocolV1(transactionalId: string): void {
  keptOnV1.add(transactionalId);
}

export function releaseTransactionProtocol(transactionalId: string): void {
  keptOnV1.delete(transactionalId);
}

/** Whether this transactional id's transactions take v2 on a broker with these versions. */
export function transactionV2For(transactionalId: string, versions: Versions | null | undefined): boolean {
  return !keptOnV1.has(transactionalId) && transactionV2Available(versions);
}

/** Whether transactions may take the v2 protocol on a broker with these versions. */
export function transactionV2Available(versions: Versions | null | undefined): boolean {
  return (
    finalizedFeatureLevel(versions, TRANSACTION_VERSION_FEATURE) >= 2 &&
    offers(versions, apiKeys.Produce as number, 12) &&
    offers(versions, apiKeys.EndTxn as number, 5) &&
    offers(versions, apiKeys.TxnOffsetCommit as number, 5)
  );
}

// ---------------------------------------------------------------------------------------------
// Every response here is of a version past KIP-219: the broker answers before throttling and the
// client holds back itself, so `throttleTime` is 0 and the broker's goes to `clientSideThrottleTime`
// (kafkajs's RequestQueue reads it), as in kafkajs's own decoders of such versions.
//
// Flexible-version helpers. kafkajs writes a flexible request header's tagged fields (none) as the
// first byte of the payload and reads a flexible response header's as the first of the body, the
// way its ListPartitionReassignments does. Its `readTaggedFields` reads a field's size as a compact
// length (one short), so it is not used: `readTags` skips each field by its size.

const NO_TAGS = 0;

function readTags(decoder: Decoder, onTag?: (tag: number, field: Decoder) => void): void {
  const count = decoder.readUVarInt();
  for (let i = 0; i < count; i++) {
    const tag = decoder.readUVarInt();
    const size = decoder.readUVarInt();
    const end = decoder.offset + size;
    if (onTag) onTag(tag, decoder);
    decoder.offset = end;
  }
}

function failOn(code: number): void {
  if (errors.failure(code)) throw errors.createErrorFromCode(code);
}

/**
 * A request of a flexible version as kafkajs's connection sends it: `body` after the request
 * header's empty tagged fields, and `read` on the response after its header's; the response fails
 * with the first error code `errorCodes` finds.
 */
function flexibleRequest<T>(spec: {
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
function topicEntries<P>(
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

// ---------------------------------------------------------------------------------------------
// ApiVersions v3: also the cluster's finalized features.

interface ApiVersionsV3 {
  errorCode: number;
  apiVersions: { apiKey: number; minVersion: number; maxVersion: number }[];
  throttleTime: number;
  clientSideThrottleTime: number;
  finalizedFeatures: Map<string, number>;
}

const FINALIZED_FEATURES_TAG = 2;

export function apiVersionsV3(clientSoftwareVersion: string): ProtocolRequest {
  return {
    request: {
      apiKey: apiKeys.ApiVersions as number,
      apiVersion: 3,
      apiName: 'ApiVersions',
      encode: () =>
        new (Encoder())()
          .writeUVarInt(NO_TAGS)
          .writeUVarIntString('kafkajs')
          .writeUVarIntString(clientSoftwareVersion)
          .writeUVarInt(NO_TAGS),
    },
    response: {
      // ApiVersions responses keep the v0 header (no tagged fields), and a broker that refuses the
      // version answers in v0's body: only the error code is read then.
      async decode(raw) {
        const d = new (Decoder())(raw);
        const errorCode = d.readInt16();
        const result: ApiVersionsV3 = {
          errorCode,
          apiVersions: [],
          throttleTime: 0,
          clientSideThrottleTime: 0,
          finalizedFeatures: new Map(),
        };
        if (errorCode !== 0) return result;
        result.apiVersions =
          d.readUVarIntArray((k) => {
            const entry = { apiKey: k.readInt16(), minVersion: k.readInt16(), maxVersion: k.readInt16() };
            readTags(k);
            return entry;
          }) ?? [];
        result.clientSideThrottleTime = d.readInt32();
        readTags(d, (tag, field) => {
          if (tag !== FINALIZED_FEATURES_TAG) return;
          field.readUVarIntArray((f) => {
            const name = f.readUVarIntString();
            const maxVersionLevel = f.readInt16();
            f.readInt16(); // min version level
            readTags(f);
            if (name !== null) result.finalizedFeatures.set(name, maxVersionLevel);
          });
        });
        return result;
      },
      async parse(data) {
        failOn((data as ApiVersionsV3).errorCode);
        return data;
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Produce v12: v7's record batches in a flexible request; the broker enrols each partition in the
// producer's transaction (transaction v2).

interface ProduceMessage {
  timestamp?: number | string | null;
  key?: unknown;
  value?: unknown;
  headers?: unknown;
}
interface ProducePartition {
  partition: number;
  messages: ProduceMessage[];
  firstSequence?: number;
}
interface ProduceArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  producerId?: unknown;
  producerEpoch?: number;
  compression?: number;
  topicData: { topic: string; partitions: ProducePartition[] }[];
}

type RecordFactory = (args: {
  key?: unknown;
  value?: unknown;
  headers?: unknown;
  offsetDelta: number;
  timestampDelta: number;
}) => Encoder;
type RecordBatchFactory = (args: Record<string, unknown>) => Promise<Encoder>;

/** One partition's records as kafkajs's Produce v3–v7 builds them (produce/v3/request.js). */
async function encodeRecordBatch(p: ProducePartition, args: ProduceArgs): Promise<Encoder> {
  const { Record, RecordBatch } = kafkajsCodec();
  const now = Date.now();
  const stamps = p.messages
    .map((m) => m.timestamp)
    .filter((t) => t != null)
    .sort();
  const timestamps = stamps.length === 0 ? [now] : stamps;
  const firstTimestamp = timestamps[0];
  const maxTimestamp = timestamps[timestamps.length - 1];
  const records = p.messages.map((m, i) =>
    Record({
      ...m,
      offsetDelta: i,
      timestampDelta: Number(m.timestamp || now) - Number(firstTimestamp),
    }),
  );
  return RecordBatch({
    compression: args.compression ?? 0,
    records,
    firstTimestamp,
    maxTimestamp,
    producerId: args.producerId,
    producerEpoch: args.producerEpoch,
    firstSequence: p.firstSequence,
    transactional: !!args.transactionalId,
    lastOffsetDelta: records.length - 1,
  });
}

interface ProduceResult {
  topics: {
    topicName: string | null;
    partitions: {
      partition: number;
      errorCode: number;
      baseOffset: string;
      logAppendTime: string;
      logStartOffset: string;
    }[];
  }[];
  throttleTime: number;
  clientSideThrottleTime: number;
}

export function produceV12(args: ProduceArgs): ProtocolRequest {
  return flexibleRequest<ProduceResult>({
    apiName: 'Produce',
    apiVersion: 12,
    expectResponse: () => args.acks !== 0,
    async body(e) {
      const E = Encoder();
      const topics: Encoder[] = [];
      for (const { topic, partitions } of args.topicData) {
        const encoded: Encoder[] = [];
        for (const p of partitions) {
          const batch = await encodeRecordBatch(p, args);
          encoded.push(
            new E()
              .writeInt32(p.partition)
              .writeUVarInt(batch.size() + 1)
              .writeEncoder(batch)
              .writeUVarInt(NO_TAGS),
          );
        }
        topics.push(
          new E().writeUVarIntString(topic).writeUVarIntArray(encoded, 'object').writeUVarInt(NO_TAGS),
        );
      }
      return e
        .writeUVarIntString(args.transactionalId ?? null)
        .writeInt16(args.acks)
        .writeInt32(args.timeout)
        .writeUVarIntArray(topics, 'object')
        .writeUVarInt(NO_TAGS);
    },
    read(d) {
      const topics =
        d.readUVarIntArray((t) => {
          const topicName = t.readUVarIntString();
          const partitions =
            t.readUVarIntArray((p) => {
              const partition = {
                partition: p.readInt32(),
                errorCode: p.readInt16(),
                baseOffset: p.readInt64().toString(),
                logAppendTime: p.readInt64().toString(),
                logStartOffset: p.readInt64().toString(),
              };
              p.readUVarIntArray((e) => {
                e.readInt32(); // batch index
                e.readUVarIntString(); // its error message
                readTags(e);
              });
              p.readUVarIntString(); // error message
              readTags(p); // the current leader, on NOT_LEADER_OR_FOLLOWER
              return partition;
            }) ?? [];
          readTags(t);
          return { topicName, partitions };
        }) ?? [];
      return { topics, throttleTime: 0, clientSideThrottleTime: d.readInt32() };
    },
    errorCodes: (result) => result.topics.flatMap((t) => t.partitions.map((p) => p.errorCode)),
  });
}

// ---------------------------------------------------------------------------------------------
// EndTxn v5: ends the transaction and bumps the producer epoch (a new producer id when the epoch
// is exhausted), which the response carries.

export interface EndTxnV5Result {
  throttleTime: number;
  clientSideThrottleTime: number;
  errorCode: number;
  producerId: string;
  producerEpoch: number;
}

export function endTxnV5(args: {
  transactionalId: string;
  producerId: unknown;
  producerEpoch: number;
  transactionResult: boolean;
}): ProtocolRequest {
  return flexibleRequest<EndTxnV5Result>({
    apiName: 'EndTxn',
    apiVersion: 5,
    body: (e) =>
      e
        .writeUVarIntString(args.transactionalId)
        .writeInt64(args.producerId)
        .writeInt16(args.producerEpoch)
        .writeBoolean(args.transactionResult)
        .writeUVarInt(NO_TAGS),
    read: (d) => ({
      throttleTime: 0,
      clientSideThrottleTime: d.readInt32(),
      errorCode: d.readInt16(),
      producerId: d.readInt64().toString(),
      producerEpoch: d.readInt16(),
    }),
    errorCodes: (result) => [result.errorCode],
  });
}

// ---------------------------------------------------------------------------------------------
// TxnOffsetCommit v3–v5, with the consumer group member's generation and id (KIP-447): the group
// coordinator refuses the offsets of a member that is no longer in the group's current generation
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), so that a member cut off from its
// group (its session expired: a long pause) cannot commit a transaction for partitions that are
// someone else's by then. On v5 the coordinator also enrols the offsets in the transaction itself
// (transaction protocol v2). kafkajs's TxnOffsetCommit (v0–v1) carries neither.

interface TxnOffsetTopic {
  topic: string;
  partitions: { partition: number; offset: string; metadata?: string | null }[];
}

interface TxnOffsetCommitResult {
  throttleTime: number;
  clientSideThrottleTime: number;
  topics: { topic: string | null; partitions: { partition: number; errorCode: number }[] }[];
}

/** The TxnOffsetCommit version of a v1 transaction's offsets with a member's identity (3 or 4), if offered. */
export function memberTxnOffsetCommitVersion(versions: Versions | null | undefined): 3 | 4 | undefined {
  const max = versions?.[apiKeys.TxnOffsetCommit as number]?.maxVersion ?? 0;
  // v5 belongs to transaction protocol v2: on v1 the offsets are enrolled by AddOffsetsToTxn.
  if (max >= 4) return 4;
  return max === 3 ? 3 : undefined;
}

export function txnOffsetCommitFlexible(args: {
  version: 3 | 4 | 5;
  transactionalId: string;
  groupId: string;
  producerId: unknown;
  producerEpoch: number;
  /** Without one, generation -1 and no member id: the coordinator checks neither (as on v0). */
  membership?: GroupMembership | undefined;
  topics: TxnOffsetTopic[];
}): ProtocolRequest {
  return flexibleRequest<TxnOffsetCommitResult>({
    apiName: 'TxnOffsetCommit',
    apiVersion: args.version,
    body(e) {
      const topics = topicEntries(args.topics, (p, e) =>
        e
          .writeInt32(p.partition)
          .writeInt64(p.offset)
          .writeInt32(-1) // committed leader epoch: unknown
          .writeUVarIntString(p.metadata ?? null)
          .writeUVarInt(NO_TAGS),
      );
      return e
        .writeUVarIntString(args.transactionalId)
        .writeUVarIntString(args.groupId)
        .writeInt64(args.producerId)
        .writeInt16(args.producerEpoch)
        .writeInt32(args.membership?.generationId ?? -1)
        .writeUVarIntString(args.membership?.memberId ?? '')
        .writeUVarIntString(args.membership?.groupInstanceId ?? null)
        .writeUVarIntArray(topics, 'object')
        .writeUVarInt(NO_TAGS);
    },
    read(d) {
      const clientSideThrottleTime = d.readInt32();
      const topics =
        d.readUVarIntArray((t) => {
          const topic = t.readUVarIntString();
          const partitions =
            t.readUVarIntArray((p) => {
              const entry = { partition: p.readInt32(), errorCode: p.readInt16() };
              readTags(p);
              return entry;
            }) ?? [];
          readTags(t);
          return { topic, partitions };
        }) ?? [];
      return { throttleTime: 0, clientSideThrottleTime, topics };
    },
    errorCodes: (result) => result.topics.flatMap((t) => t.partitions.map((p) => p.errorCode)),
  });
}

// ---------------------------------------------------------------------------------------------
// OffsetFetch v7 with RequireStable (KIP-447): a group's committed offsets once every transaction
// that commits offsets for them has completed. kafkajs's OffsetFetch (v1–v4) reads the offsets as
// committed so far, also while a transaction that moves them is still completing: a member that
// takes a partition over just then starts from the offset before it, and answers again what that
// transaction answered. With RequireStable the coordinator answers UNSTABLE_OFFSET_COMMIT (88) for
// such a partition, and the fetch is asked again (`installStableOffsetFetch`).

export interface OffsetFetchArgs {
  groupId: string;
  topics: { topic: string; partitions: { partition: number }[] }[];
}
/** kafkajs's OffsetFetch result, as its v4 decoder gives it. */
export interface OffsetFetchResult {
  throttleTime: number;
  clientSideThrottleTime: number;
  responses: {
    topic: string;
    partitions: { partition: number; offset: string; metadata: string | null; errorCode: number }[];
  }[];
  errorCode: number;
}

export function offsetFetchV7(args: OffsetFetchArgs): ProtocolRequest {
  return flexibleRequest<OffsetFetchResult>({
    apiName: 'OffsetFetch',
    apiVersion: 7,
    body(e) {
      const topics = topicEntries(args.topics, (p, e) => e.writeInt32(p.partition));
      return e
        .writeUVarIntString(args.groupId)
        .writeUVarIntArray(topics, 'object')
        .writeBoolean(true) // RequireStable
        .writeUVarInt(NO_TAGS);
    },
    read(d) {
      const clientSideThrottleTime = d.readInt32();
      const responses =
        d.readUVarIntArray((t) => {
          const topic = t.readUVarIntString() as string;
          const partitions =
            t.readUVarIntArray((p) => {
              const partition = p.readInt32();
              const offset = p.readInt64().toString();
              p.readInt32(); // committed leader epoch
              const metadata = p.readUVarIntString();
              const errorCode = p.readInt16();
              readTags(p);
              return { partition, offset, metadata, errorCode };
            }) ?? [];
          readTags(t);
          return { topic, partitions };
        }) ?? [];
      return { throttleTime: 0, clientSideThrottleTime, responses, errorCode: d.readInt16() };
    },
    errorCodes: (result) => [
      result.errorCode,
      ...result.responses.flatMap((t) => t.partitions.map((p) => p.errorCode)),
    ],
  });
}

// ---------------------------------------------------------------------------------------------
// Installation on kafkajs's Broker.

interface BrokerInstance {
  versions: Versions | null;
  connectionPool: { connectionTimeout: number };
  produce(args: ProduceArgs): Promise<unknown>;
  [key: symbol]: (request: ProtocolRequest) => Promise<unknown>;
}
interface BrokerClass {
  prototype: BrokerInstance & {
    apiVersions(this: BrokerInstance): Promise<Versions>;
    offsetFetch(this: BrokerInstance, args: OffsetFetchArgs): Promise<OffsetFetchResult>;
    endTxnV5(this: BrokerInstance, args: Parameters<typeof endTxnV5>[0]): Promise<EndTxnV5Result>;
    txnOffsetCommitFlexible(
      this: BrokerInstance,
      args: Parameters<typeof txnOffsetCommitFlexible>[0],
    ): Promise<TxnOffsetCommitResult>;
  };
}

const INSTALLED = Symbol.for('fraudlink.kafkajs.transactionV2');

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
function senderOf(Broker: BrokerClass) {
  const sendSymbol = sendRequestOf(Broker);
  return (broker: BrokerInstance, request: ProtocolRequest) =>
    (broker[sendSymbol] as (request: ProtocolRequest) => Promise<unknown>).call(broker, request);
}

export function installTransactionV2(): void {
  const shared = globalThis as Record<symbol, unknown>;
  if (shared[INSTALLED]) return;
  shared[INSTALLED] = true;

  const Broker = require(kafkajsPath('broker/index.js')) as BrokerClass;
  const send = senderOf(Broker);
  const { version: kafkajsVersion } = require('@fraudlink/kafkajs/package.json') as { version: string };
  const originalApiVersions = Broker.prototype.apiVersions;
  const originalProduce = Broker.prototype.produce;

  // ApiVersions v3 first; a broker that refuses it (older than 2.4) gets kafkajs's own negotiation.
  Broker.prototype.apiVersions = async function apiVersions() {
    let response: ApiVersionsV3;
    try {
      response = (await send(this, {
        ...apiVersionsV3(kafkajsVersion),
        requestTimeout: this.connectionPool.connectionTimeout,
        // A refusal only sends us to the older versions, as kafkajs's own v1 and v2 do.
        logResponseError: false,
      })) as ApiVersionsV3;
    } catch (e) {
      if ((e as ProtocolError).type !== 'UNSUPPORTED_VERSION') throw e;
      return originalApiVersions.call(this);
    }
    const versions: Versions = {};
    for (const { apiKey, minVersion, maxVersion } of response.apiVersions) {
      versions[apiKey] = { minVersion, maxVersion };
    }
    versions[FEATURES] = response.finalizedFeatures;
    return versions;
  };

  Broker.prototype.produce = function produce(this: BrokerInstance, args: ProduceArgs) {
    if (!args.transactionalId || !transactionV2For(args.transactionalId, this.versions)) {
      return originalProduce.call(this, args);
    }
    return send(this, produceV12({ ...args, acks: args.acks ?? -1, timeout: args.timeout ?? 30_000 }));
  };

  Broker.prototype.endTxnV5 = function (args) {
    return send(this, endTxnV5(args)) as Promise<EndTxnV5Result>;
  };
  Broker.prototype.txnOffsetCommitFlexible = function (args) {
    return send(this, txnOffsetCommitFlexible(args)) as Promise<TxnOffsetCommitResult>;
  };
}

const STABLE_OFFSETS_INSTALLED = Symbol.for('fraudlink.kafkajs.stableOffsetFetch');
/**
 * How long an OffsetFetch is asked again while a transaction keeps its offsets unstable before the
 * error goes to kafkajs (which retries it as it does any retriable error): well inside our
 * consumers' 10 s session (consumer.ts), since kafkajs heartbeats only between its own steps. A
 * transaction completes in milliseconds; one its producer left open (a crash) lasts until the
 * producer's successor fences it, or the transaction timeout.
 */
export const STABLE_OFFSETS_WAIT_MS = 5_000;

/** Every OffsetFetch asks for stable offsets (OffsetFetch v7) where the broker offers it. */
export function installStableOffsetFetch(): void {
  const shared = globalThis as Record<symbol, unknown>;
  if (shared[STABLE_OFFSETS_INSTALLED]) return;
  shared[STABLE_OFFSETS_INSTALLED] = true;

  const Broker = require(kafkajsPath('broker/index.js')) as BrokerClass;
  const send = senderOf(Broker);
  const original = Broker.prototype.offsetFetch;
  Broker.prototype.offsetFetch = async function offsetFetch(args) {
    if (!offers(this.versions, apiKeys.OffsetFetch as number, 7)) return original.call(this, args);
    const giveUpAt = Date.now() + STABLE_OFFSETS_WAIT_MS;
    for (let backoff = 10; ; backoff = Math.min(2 * backoff, 200)) {
      try {
        return (await send(this, offsetFetchV7(args))) as OffsetFetchResult;
      } catch (e) {
        if ((e as ProtocolError).type !== 'UNSTABLE_OFFSET_COMMIT' || Date.now() + backoff > giveUpAt) {
          throw e;
        }
      }
      await sleep(backoff);
    }
  };
}
