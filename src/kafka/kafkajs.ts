import { createRequire } from 'node:module';
import type * as Kafkajs from '@fraudlink/kafkajs';
import { installCodecs, MAX_DECOMPRESSED_BYTES } from './codecs.ts';
import { createEosManager, eosManagerModulePath } from './eos-manager.ts';
import { KAFKA_ERROR_CODES_AFTER_KAFKAJS } from './error-codes.ts';
import { hasErrorName } from './errors.ts';
import { installFetchDecompressionBudget } from './fetch-budget.ts';
import { kafkajsPath } from './kafkajs-path.ts';
import { MAX_SEND_BYTES, recordBytes } from './records.ts';
import { installTlsRefusalsNotRetriable } from './security-errors.ts';
import { installTopicErrors } from './topic-errors.ts';
import { installStableOffsetFetch, installTransactionV2 } from './transaction-v2.ts';
import type { OutgoingRecord } from './types.ts';
import { installUnreadableBatches } from './unreadable-batches.ts';

/**
 * kafkajs, loaded once through here so eleven fixes and eight additions are in place before any of
 * its modules load (kafkajs has had no release since 2023): one fix to what read_committed consumers
 * see, seven to the producer's hot path, one to the consumer's, one to every connection's timers and
 * one to how TLS refusals are retried (19, security-errors.ts);
 * Kafka's transaction protocol v2 (11), its error codes since kafkajs (12), a hook before a
 * consumer joins its group (13), stable committed offsets (14), a send refused before any request
 * when one partition's records outgrow a record batch (15), Kafka's Snappy, LZ4 and ZSTD codecs
 * (16, codecs.ts), Produce, AddPartitionsToTxn and Metadata errors that name their topic
 * partitions (17, topic-errors.ts) and unreadable record batches read as one record that says so
 * (18, unreadable-batches.ts). The producer fixes leave the bytes on the wire unchanged
 * (test/kafka/kafkajs-fixes.test.ts compares them with the original code's).
 *
 * 1. Aborted records of interleaved transactions. kafkajs's `filterAbortedMessages` switches on at
 * most ONE aborted transaction per message: when a fetch starts after the first offsets of two
 * aborted transactions of different producers (their records interleave in the partition, as with
 * two verifier producers or two verifier instances), the second producer's aborted records were
 * delivered to read_committed consumers. Seen here: a kafkajs read_committed reader got 402
 * "committed" replies where Kafka's own console consumer read 400. The replacement switches on every
 * aborted transaction whose first offset has been reached, in first-offset order, and takes only a
 * control record as an abort marker (kafkajs took any record whose key was 0x00000000).
 *
 * 2. Pooled encoder buffers. kafkajs builds every record with `new Encoder()`, whose constructor takes `Buffer.alloc(512)`: a
 * zero-filled, unpooled ArrayBuffer of its own, four per record with three headers, each grown by
 * another `Buffer.alloc` when it fills. The replacement takes `Buffer.allocUnsafe` instead: slices of
 * Node's shared 8 KB pool below 4 KB, no zero-filling. An Encoder only ever hands out
 * `buf.slice(0, offset)`, bytes it wrote itself, so no uninitialised byte can leave it. Measured on
 * the connector: 11% less CPU on its Kafka thread, and far fewer short-lived ArrayBuffers.
 *
 * 3. Varlongs without Long objects. Each record's timestamp delta is written with
 * `sizeOfVarLong`/`writeVarLong`, which zigzag-encode through the Long class (a dozen Long objects
 * and a `Buffer.from(array)` per record). A delta that fits 32 bits (always, in practice) now takes
 * integer arithmetic, whose zigzag value and bytes are the same; anything else takes the original.
 *
 * 4. Linear grouping by partition. `groupMessagesPerPartition` appended with
 * `[...current, message]`, copying the partition's array for every message: quadratic, 8% of the
 * connector's Kafka thread at 5,000-record transactions. The replacement pushes, in the same order.
 *
 * 5. Varints written in place. `writeUVarInt` (and `writeVarInt` through it) pushed each byte to a
 * fresh array and appended `Buffer.from(array)`: two objects per varint, six varints per record.
 * The replacement writes the same bytes straight into the Encoder's buffer.
 *
 * 6. Partitioning without Long objects. The default partitioner hashes each key with murmur2 through
 * kafkajs's BigInt-backed Long class (a dozen objects per 4 key bytes) and filters the partition
 * list for every message. The replacement hashes with 32-bit integer arithmetic (`Math.imul`): the
 * low 32 bits, all the Long version keeps, are the same, and so is every partition (Java's murmur2).
 * It filters the partition list only for a message without key or partition, the only one that
 * needs it.
 *
 * 7. Record headers written in place. Each record built an object, an array and an Encoder of its
 * own per header, copied into the record afterwards. The replacement sizes the record once and
 * writes headers, key and value into it with the same Encoder methods; a record it does not expect
 * (a header value that is neither string nor Buffer...) goes to the original.
 *
 * 8. Large requests copied once less. A produce request is built by layers (record batch, partition,
 * topic, request, frame), each copying the layer below into an Encoder of its own; `writeArray` of
 * Encoders (the topic and request layers) grew its buffer by steps, a copy per step, and the frame
 * copied the whole request twice (header plus payload, then size plus both). Now `writeArray` sizes
 * its buffer once for a list of Encoders, and the frame copies the payload once. At the connector's
 * 5,000-record transactions (~1.7 MB a request) that is, by count, ~6 MB less of mmapped buffers per
 * transaction, each resident until a scavenge finds it dead.
 *
 * 9. Records decoded with numbers on the fetch path (see `installNumericRecordDecoding`).
 *
 * 10. No 1 ms timer loop on every connection (kafkajs issues #1556 and #1704, unmerged PR #1667).
 * After every response a connection's RequestQueue schedules `checkPendingRequests`, pending
 * requests or not, with a delay of `throttledUntil - Date.now()`: about minus the current epoch
 * when not throttled, which Node runs as 1 ms; that check schedules the next one, and so on for the
 * life of the connection. Measured on an idle client with two connections: ~1,800 checks and ~35 ms
 * of CPU a second, against none and ~2–4 ms with the fix; an idle `fraudlink verifier`, 41–42
 * against 12–13 ms a second. The replacement keeps a check scheduled only while a request is
 * pending: at the end of the client-side throttle, or after the original's 10 ms when the request
 * waits for a free in-flight slot (a response checks the queue at once anyway).
 *
 * 11. Kafka's transaction protocol v2 (KIP-890; transaction-v2.ts and eos-manager.ts, which replaces
 * kafkajs's eosManager): three requests a transaction where kafkajs sends five.
 *
 * 12. Kafka's error codes 89–133 (error-codes.ts), which kafkajs would report as "Unknown error code
 * N", not retriable: e.g. PRODUCER_FENCED (90), which brokers answer newer request versions with, or
 * TRANSACTION_ABORTABLE (120), which a transaction v2 Produce can return. Each keeps Kafka's type,
 * message and retriability (its Java exception a RetriableException or not).
 *
 * 13. Hooks on a consumer's (re)join (`assignerWithGroupHooks`): kafkajs's
 * `ConsumerGroup.joinAndSync` first awaits the `beforeJoin` hook its partition assigner carries, as
 * Kafka's Java consumer calls `onPartitionsRevoked` before it rejoins, and hands itself to
 * `onGroup`, whose generation and member id a transaction then sends with the member's offsets
 * (KIP-447, as the Java consumer's `groupMetadata()`). kafkajs has no revocation callback and shows
 * no generation, and the assigners are the one per-consumer object it hands its ConsumerGroup.
 * At each fetch, once kafkajs has resolved the partitions' start offsets (`seekOffsets`), it also
 * hands `onOffsetsResolved` a reader of the offset each assigned partition is fetched from: every
 * join builds a new OffsetManager that resolves them again (the committed offset, or with none the
 * topic's first or latest), and a member that commits nothing keeps them itself (`resumeOnRejoin`).
 *
 * 14. Stable committed offsets (KIP-447; `offsetFetchV7` in transaction-v2.ts): every OffsetFetch
 * asks with RequireStable where the broker offers OffsetFetch v7, and is asked again while a
 * transaction that commits the group's offsets is completing, so that a member taking a partition
 * over starts after what that transaction answered.
 *
 * 15. One partition's records outgrowing a record batch (`PartitionBatchTooLargeError`, below).
 *
 * 16. Compressed record batches (codecs.ts): kafkajs reads only gzip's, and a consumer crashed on the
 * first Snappy, LZ4 or ZSTD batch it fetched, whichever producer or topic setting compressed it.
 * gzip's codec is replaced too: kafkajs's decompressed asynchronously, in chunks, and replay ran at
 * about two thirds of the rate (226–286k against 352–494k events/s). Each fetch response decodes
 * under a budget of decompressed bytes (fetch-budget.ts), which the codecs spend.
 *
 * 17. Produce, AddPartitionsToTxn and Metadata errors carry every failing topic partition
 * (topic-errors.ts): kafkajs throws the first one's error alone, naming neither topic nor partition.
 *
 * 18. Unreadable record batches (unreadable-batches.ts): a compressed batch that does not
 * decompress, or would pass the codecs' bound, failed the whole fetch, and the consumer crashed and
 * restarted into it for ever. It is now one record at its last offset carrying `unreadableBatch`.
 *
 * 19. A broker certificate that fails verification, or a client certificate the broker refuses, is
 * not retriable (security-errors.ts): kafkajs retried it like a broker away.
 *
 * Measured on the connector (HeapProfiler sampling, 14 s of a 1,000,000-row run): 5, 6 and 7 took
 * the main thread's allocations from 5.4 to 1.5 GB (~390 to ~110 MB/s). Before, V8 answered with a
 * scavenge every few milliseconds and promoted ~40 MB/s of per-record objects to the old generation.
 *
 * The swaps replace a module's export in the CommonJS cache, so the modules that `require` it
 * afterwards (all of kafkajs, loaded by the `require('@fraudlink/kafkajs')` below) get it; the class
 * itself is unchanged, so `instanceof` and the static helpers keep working. `@fraudlink/kafkajs` is
 * an npm alias of kafkajs, fraudlink's own copy (src/kafka/README.md): an application's `kafkajs`,
 * loaded before or after, is neither patched nor able to pre-empt the patches.
 */

const require = createRequire(import.meta.url);

interface EncoderClass {
  new (initialSize?: number): EncoderInstance;
  prototype: EncoderInstance;
  nextPowerOfTwo(value: number): number;
  sizeOfVarLong(value: unknown): number;
  sizeOfVarInt(value: unknown): number;
  sizeOfVarIntBytes(value: unknown): number;
}
interface EncoderInstance {
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

type Grouper = (args: {
  topic: string;
  partitionMetadata: unknown[];
  messages: unknown[];
  partitioner: (args: { topic: string; partitionMetadata: unknown[]; message: unknown }) => number;
}) => Record<number, unknown[]>;

export const encoderModulePath = kafkajsPath('protocol/encoder.js');
export const groupModulePath = kafkajsPath('producer/groupMessagesPerPartition.js');
export const abortFilterModulePath = kafkajsPath('consumer/filterAbortedMessages.js');
export const murmur2ModulePath = kafkajsPath('producer/partitioners/default/murmur2.js');
export const partitionerModulePath = kafkajsPath('producer/partitioners/legacy/partitioner.js');
export const recordModulePath = kafkajsPath('protocol/recordBatch/record/v0/index.js');
export const requestModulePath = kafkajsPath('protocol/request.js');
export const recordDecoderModulePath = kafkajsPath('protocol/recordBatch/record/v0/decoder.js');
export const requestQueueModulePath = kafkajsPath('network/requestQueue/index.js');

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
type RecordEncoder = (record: RecordArgs) => EncoderInstance;

export interface PartitionMetadata {
  partitionId: number;
  leader: number;
}
/** kafkajs's partitioner factory (producer/partitioners/legacy/partitioner.js), given a hash. */
type PartitionerFactory = (
  hash: (key: unknown) => number,
) => () => (args: {
  topic: string;
  partitionMetadata: PartitionMetadata[];
  message: { key?: unknown; partition?: number | null };
}) => number;

export interface FetchedMessage {
  offset: string;
  key: Buffer | null;
  isControlRecord?: boolean;
  batchContext: { producerId: string; inTransaction: boolean };
}
type AbortFilter = (args: {
  messages: FetchedMessage[];
  abortedTransactions?: { firstOffset: string; producerId: string }[];
}) => FetchedMessage[];

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

interface Originals {
  ensureAvailable?: (this: EncoderInstance, length: number) => void;
  writeEncoderArray?: (this: EncoderInstance, value: EncoderInstance[]) => EncoderInstance;
  sizeOfVarLong?: (value: unknown) => number;
  writeVarLong?: (this: EncoderInstance, value: unknown) => EncoderInstance;
  writeUVarInt?: (this: EncoderInstance, value: unknown) => EncoderInstance;
  groupMessagesPerPartition?: Grouper;
  filterAbortedMessages?: AbortFilter;
  murmur2?: (key: unknown) => number;
  createPartitioner?: PartitionerFactory;
  record?: RecordEncoder;
  writeArray?: (this: EncoderInstance, array: unknown[], type?: string, length?: number) => EncoderInstance;
  frameRequest?: RequestFramer;
  decodeRecord?: RecordDecoder;
  scheduleCheckPendingRequests?: () => void;
  joinAndSync?: () => Promise<void>;
  seekOffsets?: (topicPartitions: unknown) => Promise<void>;
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

/** Past this size (64 KiB) an Encoder grows to fit a write rather than to the next power of two. */
const LARGE_WRITE = 64 * 1024;

const isEncoder = (v: unknown): v is EncoderInstance =>
  typeof v === 'object' && v !== null && Buffer.isBuffer((v as EncoderInstance).buf);

/** The bytes a list of Encoders holds. */
function encodedLength(encoders: readonly EncoderInstance[]): number {
  let total = 0;
  for (const e of encoders) total += e.offset;
  return total;
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
  originals.ensureAvailable = Encoder.prototype.ensureAvailable;
  originals.writeEncoderArray = Encoder.prototype.writeEncoderArray;
  Encoder.prototype.ensureAvailable = function ensureAvailable(this: EncoderInstance, length: number) {
    const needed = this.offset + length;
    if (needed > this.buf.length) {
      // Doubling amortises many small writes. A large one (a record batch copied into the next
      // layer of the request) takes what it needs, or half again for later appends: the next power
      // of two wasted up to half of every large buffer.
      const size =
        needed <= LARGE_WRITE
          ? Encoder.nextPowerOfTwo(needed)
          : Math.max(needed, Math.floor(this.buf.length * 1.5));
      const grown = Buffer.allocUnsafe(size);
      this.buf.copy(grown, 0, 0, this.offset);
      this.buf = grown;
    }
  };
  // The records of a batch, sized once: appended one by one they grew the batch's buffer by doubling
  // from 512 bytes, a chain of copies as large as the batch itself.
  Encoder.prototype.writeEncoderArray = function writeEncoderArray(
    this: EncoderInstance,
    value: EncoderInstance[],
  ) {
    if (!Array.isArray(value) || !value.every(isEncoder)) {
      throw new Error('all values should be an instance of Encoder[]');
    }
    this.ensureAvailable(encodedLength(value));
    for (const v of value) {
      v.buf.copy(this.buf, this.offset, 0, v.offset);
      this.offset += v.offset;
    }
    return this;
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

/**
 * 15. A send refused before any request when one partition's records outgrow one record batch
 * (`MAX_SEND_BYTES`): kafkajs writes them all as one batch, which the broker refuses whole. Thrown by
 * the grouper, where a record's partition is first known, so only such a send is cut into smaller
 * ones (producer.ts), not every send larger than one batch: a 5,000-record connector transaction
 * spread over the alerts topic's partitions goes in one request. Not retriable, so kafkajs's own
 * retry hands it back (wrapped after a reconnect, see `is`). A partition of one record is the
 * broker's to judge. Only sends marked in `cuttableMessages` (producer.ts's) are checked, and only
 * at their first grouping: a retry after part of the send was written must not be refused, or the
 * cut send would write that part twice. Any other kafkajs user in the process (the bench's bare
 * producer) sends as before.
 */
export class PartitionBatchTooLargeError extends Error {
  /** Starts its message; kafkajs logs the error at ERROR before handing it back (logging.ts). */
  static readonly prefix = 'send to be cut:';
  readonly retriable = false;
  readonly topic: string;
  readonly partition: number;
  readonly bytes: number;
  constructor(topic: string, partition: number, bytes: number) {
    super(
      `${PartitionBatchTooLargeError.prefix} the records of ${topic}/${partition} take ~${bytes} bytes, more than one batch`,
    );
    this.topic = topic;
    this.partition = partition;
    this.bytes = bytes;
  }

  override get name(): string {
    return 'PartitionBatchTooLargeError';
  }

  /**
   * By name, not `instanceof`: the grouper installed is the first evaluation's (see `originals`),
   * and a test runner may evaluate this module, and so this class, again. Along the cause chain:
   * kafkajs's retry wraps it in a KafkaJSNonRetriableError when sendMessages threw it on after
   * reconnecting a cluster it found disconnected.
   */
  static is(err: unknown): boolean {
    return hasErrorName(err, 'PartitionBatchTooLargeError');
  }
}

const CUTTABLE = Symbol.for('fraudlink.kafkajs.cuttable');
(shared as Record<symbol, unknown>)[CUTTABLE] ??= new WeakSet<object>();
/**
 * The message lists (a send's `topicMessages[].messages`, which kafkajs hands the grouper as they
 * are) whose send fix 15 may refuse: fraudlink's own, whose sender cuts a refused send. Any other
 * kafkajs send is grouped as before, unchecked. Per process, like `originals`.
 */
export const cuttableMessages = (shared as Record<symbol, unknown>)[CUTTABLE] as WeakSet<object>;

function installLinearGrouping(): void {
  if (originals.groupMessagesPerPartition) return;
  originals.groupMessagesPerPartition = require(groupModulePath) as Grouper;
  const grouped: Grouper = ({ topic, partitionMetadata, messages, partitioner }) => {
    const result: Record<number, unknown[]> = {};
    if (partitionMetadata.length === 0) return result;
    // Checked once: a later grouping is a retry, which may follow a partly written send.
    const bytes: Record<number, number> | undefined = cuttableMessages.delete(messages) ? {} : undefined;
    for (const message of messages) {
      const partition = partitioner({ topic, partitionMetadata, message });
      const list = result[partition];
      if (list) list.push(message);
      else result[partition] = [message];
      if (bytes === undefined) continue;
      const total = (bytes[partition] ?? 0) + recordBytes(message as OutgoingRecord);
      bytes[partition] = total;
      if (list && total > MAX_SEND_BYTES) throw new PartitionBatchTooLargeError(topic, partition, total);
    }
    return result;
  };
  (require.cache[groupModulePath] as NodeJS.Module).exports = grouped;
}

function installInPlaceVarInt(): void {
  const Encoder = require(encoderModulePath) as EncoderClass;
  if (originals.writeUVarInt) return;
  originals.writeUVarInt = Encoder.prototype.writeUVarInt;
  // The original's loop, byte for byte (its coercions included), into the buffer instead of an array.
  // Five bytes at most: after the first step the value is an unsigned 25-bit integer.
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
}

const MURMUR2_SEED = 0x9747b28c;
const MURMUR2_M = 0x5bd1e995;

/** Kafka's murmur2 (Java's `Utils.murmur2`), on 32-bit integers. Keys as kafkajs takes them. */
export function murmur2(key: unknown): number {
  const data = Buffer.isBuffer(key) ? key : Buffer.from(String(key));
  const length = data.length;
  let h = (MURMUR2_SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k =
      (data[i4] as number) |
      ((data[i4 + 1] as number) << 8) |
      ((data[i4 + 2] as number) << 16) |
      ((data[i4 + 3] as number) << 24);
    k = Math.imul(k, MURMUR2_M);
    k ^= k >>> 24;
    k = Math.imul(k, MURMUR2_M);
    h = Math.imul(h, MURMUR2_M) ^ k;
  }
  // The last one to three bytes (Java falls through its switch on length % 4).
  const tail = length & ~3;
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= (data[tail + 2] as number) << 16;
    if (rest >= 2) h ^= (data[tail + 1] as number) << 8;
    h ^= data[tail] as number;
    h = Math.imul(h, MURMUR2_M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, MURMUR2_M);
  h ^= h >>> 15;
  return h | 0;
}

const toPositive = (x: number) => x & 0x7fffffff;

function installPartitioning(): void {
  if (originals.createPartitioner) return;
  originals.murmur2 = require(murmur2ModulePath) as (key: unknown) => number;
  originals.createPartitioner = require(partitionerModulePath) as PartitionerFactory;
  const randomBytes = require(kafkajsPath('producer/partitioners/legacy/randomBytes.js')) as (
    size: number,
  ) => Buffer;
  // kafkajs's partitioner (legacy/partitioner.js) with the same rules, the same random start per
  // topic and the same round robin; the list of available partitions is built only when used.
  const createPartitioner: PartitionerFactory = (hash) => () => {
    const counters: Record<string, number> = {};
    return ({ topic, partitionMetadata, message }) => {
      if (!(topic in counters)) counters[topic] = randomBytes(32).readUInt32BE(0);
      const numPartitions = partitionMetadata.length;
      if (message.partition !== null && message.partition !== undefined) return message.partition;
      if (message.key !== null && message.key !== undefined)
        return toPositive(hash(message.key)) % numPartitions;
      const available = partitionMetadata.filter((p) => p.leader >= 0);
      counters[topic] = (counters[topic] as number) + 1;
      if (available.length > 0) {
        return (available[toPositive(counters[topic] as number) % available.length] as PartitionMetadata)
          .partitionId;
      }
      return toPositive(counters[topic] as number) % numPartitions;
    };
  };
  (require.cache[murmur2ModulePath] as NodeJS.Module).exports = murmur2;
  (require.cache[partitionerModulePath] as NodeJS.Module).exports = createPartitioner;
}

const isText = (v: unknown): v is string | Buffer => typeof v === 'string' || Buffer.isBuffer(v);

function installInPlaceHeaders(): void {
  if (originals.record) return;
  const Encoder = require(encoderModulePath) as EncoderClass;
  const original = require(recordModulePath) as RecordEncoder;
  originals.record = original;
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
  (require.cache[recordModulePath] as NodeJS.Module).exports = record;
}

function installOneCopyRequests(): void {
  if (originals.frameRequest) return;
  const Encoder = require(encoderModulePath) as EncoderClass;
  const writeArray = Encoder.prototype.writeArray;
  originals.writeArray = writeArray;
  // A list of Encoders (a request's topics, a topic's partitions) is written as by the original, into
  // a buffer grown once to hold them all; anything else goes to the original as it is.
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
  originals.frameRequest = require(requestModulePath) as RequestFramer;
  // The original's bytes: size, api key, version, correlation id, client id, payload. The payload is
  // copied once, into a buffer that a payload over 64 KiB grows to exactly (the pooled encoder's
  // ensureAvailable, installPooledEncoder).
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
  (require.cache[requestModulePath] as NodeJS.Module).exports = frameRequest;
}

/** The control record that ends an aborted transaction: key = version 0, type 0 (ABORT). */
function isAbortMarker(message: FetchedMessage): boolean {
  const key = message.key;
  return message.isControlRecord === true && key !== null && key.length >= 4 && key.readInt32BE(0) === 0;
}

function installAbortFilterFix(): void {
  if (originals.filterAbortedMessages) return;
  originals.filterAbortedMessages = require(abortFilterModulePath) as AbortFilter;
  const filter: AbortFilter = ({ messages, abortedTransactions }) => {
    if (!abortedTransactions || abortedTransactions.length === 0) return messages;
    const pending = abortedTransactions
      .map((t) => ({ firstOffset: BigInt(t.firstOffset), producerId: String(t.producerId) }))
      .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
    const aborting = new Set<string>();
    let next = 0;
    return messages.filter((message) => {
      const offset = BigInt(message.offset);
      while (next < pending.length && offset >= (pending[next] as { firstOffset: bigint }).firstOffset) {
        aborting.add((pending[next] as { producerId: string }).producerId);
        next++;
      }
      const producerId = String(message.batchContext.producerId);
      if (isAbortMarker(message)) {
        aborting.delete(producerId);
        return true; // a control record: kafkajs drops those right after this filter
      }
      return !(aborting.has(producerId) && message.batchContext.inTransaction);
    });
  };
  (require.cache[abortFilterModulePath] as NodeJS.Module).exports = filter;
}

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

/**
 * Fetched records: the original turns each record's offset and timestamp into `Long`s, parsing the
 * batch's base offset from its decimal string for every record, and builds the headers object anew
 * for each header. Here both bases are parsed once per batch and added as numbers; a record whose
 * values leave the safe-integer range, or a header named `__proto__`, is decoded by the original.
 */
function installNumericRecordDecoding(): void {
  if (originals.decodeRecord) return;
  const original = require(recordDecoderModulePath) as RecordDecoder;
  originals.decodeRecord = original;
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
  (require.cache[recordDecoderModulePath] as NodeJS.Module).exports = decodeRecord;
}

/** kafkajs's per-connection request queue: only the members the scheduling fix touches. */
interface RequestQueueInstance {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** kafkajs's own wait before it checks again for a request that waits for an in-flight slot. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

/** 11. Kafka's transaction protocol v2 (transaction-v2.ts): kafkajs's eosManager swapped for ours. */
function installEosManager(): void {
  require(eosManagerModulePath);
  const cached = require.cache[eosManagerModulePath] as NodeJS.Module;
  cached.exports = createEosManager;
}

function installRequestQueueWithoutLoop(): void {
  const RequestQueue = require(requestQueueModulePath) as { prototype: RequestQueueInstance };
  if (originals.scheduleCheckPendingRequests) return;
  originals.scheduleCheckPendingRequests = RequestQueue.prototype.scheduleCheckPendingRequests;
  RequestQueue.prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(
    this: RequestQueueInstance,
  ) {
    if (this.pending.length === 0) {
      // Nothing left to send: a check scheduled for a request sent since would only run for nothing.
      if (this.throttleCheckTimeoutId) clearTimeout(this.throttleCheckTimeoutId);
      this.throttleCheckTimeoutId = null;
      return;
    }
    if (this.throttleCheckTimeoutId) return;
    const untilUnthrottled = this.throttledUntil - Date.now();
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS,
    );
  };
}

export const errorModulePath = kafkajsPath('protocol/error.js');
const consumerGroupModulePath = kafkajsPath('consumer/consumerGroup.js');
const roundRobinModulePath = kafkajsPath('consumer/assigners/roundRobinAssigner/index.js');

/** 12. kafkajs looks codes up in its exported `errorCodes` array at each error; ours appended once. */
function installErrorCodes(): void {
  const { errorCodes } = require(errorModulePath) as {
    errorCodes: { type: string; code: number; retriable: boolean; message: string }[];
  };
  for (const [code, type, retriable, message] of KAFKA_ERROR_CODES_AFTER_KAFKAJS) {
    if (!errorCodes.some((e) => e.code === code)) errorCodes.push({ type, code, retriable, message });
  }
}

/** Where an assigner carries its consumer's hooks (13); one per process, as the patch is. */
const GROUP_HOOKS = Symbol.for('fraudlink.kafkajs.groupHooks');
type AssignerFactory = (args: object) => Record<string | symbol, unknown>;

/**
 * What a kafkajs ConsumerGroup shows of its membership: set by each JoinGroup, `memberId` reset when
 * the coordinator no longer knows it.
 */
export interface KafkajsGroupState {
  readonly generationId: number | null;
  readonly memberId: string | null;
}

export interface GroupJoinHooks {
  /** Awaited before every join; should not reject. */
  beforeJoin?: (() => Promise<void>) | undefined;
  /** Handed the member's ConsumerGroup before every join (a restarted consumer has a new one). */
  onGroup?: ((group: KafkajsGroupState) => void) | undefined;
  /**
   * Called at every fetch once kafkajs has resolved its start offsets, with a reader of the offset
   * the member fetches a partition of its assignment from next (undefined while unresolved).
   */
  onOffsetsResolved?: ((offsetOf: FetchOffsetReader) => void) | undefined;
}

export type FetchOffsetReader = (topic: string, partition: number) => bigint | undefined;

/**
 * kafkajs's round-robin assigner (its default), carrying the member's hooks: its ConsumerGroup
 * hands itself to `onGroup` and awaits `beforeJoin` before every join, and calls
 * `onOffsetsResolved` at every fetch.
 */
export function assignerWithGroupHooks(hooks: GroupJoinHooks): Kafkajs.PartitionAssigner {
  const roundRobin = require(roundRobinModulePath) as AssignerFactory;
  const factory: AssignerFactory = (args) => Object.assign(roundRobin(args), { [GROUP_HOOKS]: hooks });
  return factory as unknown as Kafkajs.PartitionAssigner;
}

/** The parts of kafkajs's OffsetManager (one per join) that say where each partition is fetched from. */
interface KafkajsOffsetManager {
  /** Moved on past each batch handed over, and by seeks. */
  resolvedOffsets: Record<string, Record<number, string | undefined> | undefined>;
  /** The start offsets resolved at the first fetch after the join; '-1' or absent until then. */
  committedOffsets(): Record<string, Record<number, string | undefined> | undefined>;
}

interface KafkajsConsumerGroup extends KafkajsGroupState {
  assigners?: Record<symbol, unknown>[];
  offsetManager: KafkajsOffsetManager | null;
  joinAndSync(): Promise<void>;
  seekOffsets(topicPartitions: unknown): Promise<void>;
}

/** What kafkajs's `OffsetManager.nextOffset` would fetch from, without its side effect; undefined if unresolved. */
function fetchOffsetReader(manager: KafkajsOffsetManager | null): FetchOffsetReader {
  return (topic, partition) => {
    const offset =
      manager?.resolvedOffsets[topic]?.[partition] ?? manager?.committedOffsets()[topic]?.[partition];
    const text = offset === undefined || offset === null ? '' : String(offset);
    return /^\d+$/.test(text) ? BigInt(text) : undefined;
  };
}

function installGroupHooks(): void {
  const ConsumerGroup = require(consumerGroupModulePath) as { prototype: KafkajsConsumerGroup };
  const original = ConsumerGroup.prototype.joinAndSync;
  if (originals.joinAndSync) return;
  originals.joinAndSync = original;
  const hooksOf = (group: KafkajsConsumerGroup) =>
    group.assigners?.find((a) => a[GROUP_HOOKS])?.[GROUP_HOOKS] as GroupJoinHooks | undefined;
  ConsumerGroup.prototype.joinAndSync = async function joinAndSync() {
    const hooks = hooksOf(this);
    hooks?.onGroup?.(this);
    if (hooks?.beforeJoin) await hooks.beforeJoin();
    return original.call(this);
  };
  const seekOffsets = ConsumerGroup.prototype.seekOffsets;
  originals.seekOffsets = seekOffsets;
  // Applies pending seeks, then resolves the start offsets of the whole assignment (OffsetFetch,
  // then ListOffsets for partitions without a committed offset), before every fetch.
  ConsumerGroup.prototype.seekOffsets = async function resolvingSeekOffsets(topicPartitions) {
    await seekOffsets.call(this, topicPartitions);
    hooksOf(this)?.onOffsetsResolved?.(fetchOffsetReader(this.offsetManager));
  };
}

// First: it swaps a class that kafkajs's network modules take when they load.
installTlsRefusalsNotRetriable();
installAbortFilterFix();
installPooledEncoder();
installIntVarLong();
installInPlaceVarInt();
installLinearGrouping();
installPartitioning();
installInPlaceHeaders();
installOneCopyRequests();
installNumericRecordDecoding();
// After the record decoder's swap: kafkajs's batch decoder takes the record decoder when it loads.
installUnreadableBatches();
installRequestQueueWithoutLoop();
installTransactionV2();
installEosManager();
installErrorCodes();
installGroupHooks();
installStableOffsetFetch();
installTopicErrors();
installFetchDecompressionBudget(MAX_DECOMPRESSED_BYTES);

const kafkajs = require('@fraudlink/kafkajs') as typeof Kafkajs;
installCodecs(kafkajs);
export default kafkajs;
