import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { FencedError, KafkaError } from '../../src/errors.ts';
import { toKafkaError } from '../../src/kafka/errors.ts';
import '../../src/kafka/kafkajs.ts';
import {
  encoderModulePath,
  errorModulePath,
  groupModulePath,
  murmur2ModulePath,
  type PartitionMetadata,
  partitionerModulePath,
  type RecordArgs,
  type RecordBatchContext,
  type RequestFramer,
  recordDecoderModulePath,
  recordModulePath,
  requestModulePath,
  requestQueueModulePath,
} from '../../src/kafka/fixes/kafkajs-internals.ts';
import { murmur2 } from '../../src/kafka/fixes/long-free-partitioner.ts';
import { PartitionBatchTooLargeError } from '../../src/kafka/fixes/oversized-partition-batch.ts';
import { fixState } from '../../src/kafka/fixes/state.ts';
import { MAX_SEND_BYTES } from '../../src/kafka/records.ts';

const { originals, cuttableMessages } = fixState;

const require = createRequire(import.meta.url);
type Encoded = { buffer: Buffer };
const Record = require('@fraudlink/kafkajs/src/protocol/recordBatch/record/v0/index.js') as (
  r: object,
) => Encoded;
const { RecordBatch } = require('@fraudlink/kafkajs/src/protocol/recordBatch/v0/index.js') as {
  RecordBatch: (b: object) => Promise<Encoded>;
};
const Decoder = require('@fraudlink/kafkajs/src/protocol/decoder.js') as new (
  b: Buffer,
) => { readVarInt(): number };
const decodeRecord = require('@fraudlink/kafkajs/src/protocol/recordBatch/record/v0/decoder.js') as (
  d: unknown,
  ctx: object,
) => { key: Buffer; value: Buffer; headers: Record<string, Buffer> };

/** Leaves `byte` in Node's shared allocation pool, where an unwritten byte would come from. */
function dirtyPool(byte: number): void {
  for (let i = 0; i < 64; i++) Buffer.allocUnsafe(128).fill(byte);
}

const record = {
  key: 'DE89370400440532013000',
  value: Buffer.from('an Avro value, any bytes will do'.repeat(30)), // outgrows the first 512 bytes
  headers: { 'event-type': 'AlertUpserted', 'event-id': 'e'.repeat(64), 'alert-id': 'a-1' },
};

describe('kafkajs with the pooled Encoder', () => {
  it('is the Encoder every kafkajs module gets', () => {
    const Encoder = require(encoderModulePath) as { pooled?: boolean };
    expect(Encoder.pooled).toBe(true);
  });

  it('encodes the same bytes whatever the pool held before, and they decode to the record', async () => {
    dirtyPool(0x00);
    const clean = Record(record).buffer;
    dirtyPool(0xff);
    const dirty = Record(record).buffer;
    expect(dirty.equals(clean)).toBe(true);
    const decoder = new Decoder(dirty);
    decoder.readVarInt(); // the record's length prefix
    const decoded = decodeRecord(decoder, { firstOffset: '0', firstTimestamp: '0', magicByte: 2 });
    expect(decoded.key.toString()).toBe(record.key);
    expect(decoded.value.equals(record.value)).toBe(true);
    expect(Object.fromEntries(Object.entries(decoded.headers).map(([k, v]) => [k, v.toString()]))).toEqual(
      record.headers,
    );
  });

  it('builds identical record batches (CRC included) over a dirty pool', async () => {
    const batch = async () =>
      (await RecordBatch({ firstTimestamp: 1, maxTimestamp: 1, records: [Record(record), Record(record)] }))
        .buffer;
    dirtyPool(0x00);
    const clean = await batch();
    dirtyPool(0xab);
    expect((await batch()).equals(clean)).toBe(true);
  });

  it('builds a multi-megabyte batch byte for byte as kafkajs does, with the batch sized once', async () => {
    const Encoder = require(encoderModulePath) as {
      prototype: { ensureAvailable: unknown; writeEncoderArray: unknown };
    };
    const records = Array.from({ length: 3000 }, (_, i) => ({ ...record, key: `${record.key}-${i}` }));
    const batch = async () =>
      (await RecordBatch({ firstTimestamp: 1, maxTimestamp: 1, records: records.map((r) => Record(r)) }))
        .buffer;
    const ours = await batch();
    const { ensureAvailable, writeEncoderArray } = Encoder.prototype;
    Object.assign(Encoder.prototype, {
      ensureAvailable: originals.ensureAvailable,
      writeEncoderArray: originals.writeEncoderArray,
    });
    try {
      const theirs = await batch();
      expect(ours.length).toBeGreaterThan(2 * 1024 * 1024);
      expect(ours.equals(theirs)).toBe(true);
    } finally {
      Object.assign(Encoder.prototype, { ensureAvailable, writeEncoderArray });
    }
  });
});

describe('kafkajs varlongs without Long objects', () => {
  const Encoder = require(encoderModulePath) as {
    new (): { writeVarLong(v: unknown): { buffer: Buffer } };
    sizeOfVarLong(v: unknown): number;
  };
  const reference = (value: unknown): Buffer => {
    const encoder = new Encoder();
    return (originals.writeVarLong as unknown as (this: unknown, v: unknown) => { buffer: Buffer }).call(
      encoder,
      value,
    ).buffer;
  };
  const values = [
    0,
    1,
    -1,
    63,
    64,
    -64,
    -65,
    127,
    128,
    300,
    -300,
    2 ** 20,
    -(2 ** 20),
    2 ** 30,
    2 ** 31 - 1,
    -(2 ** 31),
  ];

  it('writes the bytes and sizes of the Long-based original for every 32-bit value', () => {
    for (const value of [
      ...values,
      ...Array.from({ length: 200 }, () => Math.floor((Math.random() - 0.5) * 2 ** 32)),
    ]) {
      const expected = reference(value);
      expect(new Encoder().writeVarLong(value).buffer.equals(expected), `value ${value}`).toBe(true);
      expect(Encoder.sizeOfVarLong(value)).toBe(expected.length);
      expect(Encoder.sizeOfVarLong(value)).toBe((originals.sizeOfVarLong as (v: unknown) => number)(value));
    }
  });

  it('leaves values beyond 32 bits, and non-numbers, to the original', () => {
    for (const value of [2 ** 31, -(2 ** 31) - 1, 2 ** 40, -(2 ** 45), '12345']) {
      expect(new Encoder().writeVarLong(value).buffer.equals(reference(value))).toBe(true);
      expect(Encoder.sizeOfVarLong(value)).toBe((originals.sizeOfVarLong as (v: unknown) => number)(value));
    }
  });
});

describe('kafkajs grouping by partition', () => {
  const grouper = require(groupModulePath) as (args: object) => Record<number, unknown[]>;
  const partitioner = ({ message }: { message: { p: number } }) => message.p;
  const args = (messages: { p: number; i: number }[]) => ({
    topic: 't',
    partitionMetadata: [{}, {}, {}],
    messages,
    partitioner,
  });

  it('is linear and groups exactly as the original, keeping each partition in message order', () => {
    expect(grouper).not.toBe(originals.groupMessagesPerPartition);
    const messages = Array.from({ length: 500 }, (_, i) => ({ p: (i * 7) % 3, i }));
    const ours = grouper(args(messages));
    const theirs = (originals.groupMessagesPerPartition as (a: object) => Record<number, unknown[]>)(
      args(messages),
    );
    expect(ours).toEqual(theirs);
    expect((ours[1] as { i: number }[]).map((m) => m.i)).toEqual(
      messages.filter((m) => m.p === 1).map((m) => m.i),
    );
  });

  it('refuses, before any request, a fraudlink send whose records for one partition outgrow a batch (fix 15)', () => {
    const record = (p: number) => ({ p, key: 'k', value: Buffer.alloc(100_000), headers: {} });
    const cuttable = <T extends object>(messages: T[]) => {
      cuttableMessages.add(messages);
      return messages;
    };
    // Ten records of 100 kB: over MAX_SEND_BYTES in one partition, under it in each of three.
    const one = Array.from({ length: 10 }, () => record(1));
    let refused: unknown;
    try {
      grouper({ ...args([]), messages: cuttable([...one]) });
    } catch (err) {
      refused = err;
    }
    expect(PartitionBatchTooLargeError.is(refused)).toBe(true);
    expect(refused).toMatchObject({ topic: 't', partition: 1, retriable: false });
    // Any other kafkajs send is grouped as before; so is a marked one grouped again (a retry).
    expect(grouper({ ...args([]), messages: one })).toEqual({ 1: one });
    const retried = cuttable(Array.from({ length: 10 }, () => record(1)));
    expect(() => grouper({ ...args([]), messages: retried })).toThrow();
    expect(grouper({ ...args([]), messages: retried })).toEqual({ 1: retried });
    // kafkajs's retry wraps it after a reconnect: still recognised.
    const { KafkaJSNonRetriableError } = require('@fraudlink/kafkajs/src/errors.js') as {
      KafkaJSNonRetriableError: new (e: unknown, o: { cause: unknown }) => Error;
    };
    expect(PartitionBatchTooLargeError.is(new KafkaJSNonRetriableError(refused, { cause: refused }))).toBe(
      true,
    );
    expect(PartitionBatchTooLargeError.is(new Error('other'))).toBe(false);
    const spread = cuttable(Array.from({ length: 10 }, (_, i) => record(i % 3)));
    expect(Object.values(grouper({ ...args([]), messages: spread })).map((l) => l.length)).toEqual([4, 3, 3]);
    // One record larger than a batch alone is the broker's to judge.
    const large = { p: 0, key: 'k', value: Buffer.alloc(2 * MAX_SEND_BYTES), headers: {} };
    expect(grouper({ ...args([]), messages: cuttable([large]) })).toEqual({ 0: [large] });
  });

  it('returns no partitions without partition metadata, as the original', () => {
    expect(grouper({ ...args([{ p: 0, i: 0 }]), partitionMetadata: [] })).toEqual({});
  });
});

describe('kafkajs varints written in place', () => {
  type Enc = { writeUVarInt(v: unknown): Enc; writeVarInt(v: unknown): Enc; buffer: Buffer };
  const Encoder = require(encoderModulePath) as new () => Enc;
  const reference = (value: unknown): Buffer =>
    (originals.writeUVarInt as unknown as (this: Enc, v: unknown) => Enc).call(new Encoder(), value).buffer;

  it('writes the bytes of the array-based original, coercions included', () => {
    const values: unknown[] = [
      0,
      1,
      127,
      128,
      16_383,
      16_384,
      2 ** 28,
      2 ** 31 - 1,
      -1,
      -(2 ** 31),
      2 ** 32 + 5,
      2 ** 40,
      3.7,
      -0.5,
      '300',
      null,
      ...Array.from({ length: 300 }, () => Math.floor((Math.random() - 0.5) * 2 ** 33)),
    ];
    for (const value of values) {
      expect(new Encoder().writeUVarInt(value).buffer.equals(reference(value)), `value ${value}`).toBe(true);
    }
  });

  it('appends after what the Encoder holds, growing it as needed', () => {
    const encoder = new Encoder();
    const expected: Buffer[] = [];
    for (let i = 0; i < 400; i++) {
      const value = i * 997 - 200_000;
      encoder.writeVarInt(value);
      expected.push(reference(((value << 1) ^ (value >> 31)) | 0));
    }
    expect(encoder.buffer.equals(Buffer.concat(expected))).toBe(true);
  });
});

describe('kafkajs partitioning without Long objects', () => {
  const randomKey = (): string | Buffer => {
    const length = Math.floor(Math.random() * 40);
    return Math.random() < 0.5
      ? Buffer.from(Array.from({ length }, () => Math.floor(Math.random() * 256)))
      : Array.from({ length }, () => String.fromCodePoint(32 + Math.floor(Math.random() * 0x2000))).join('');
  };

  it('is the hash kafkajs partitions with', () => {
    expect(require(murmur2ModulePath)).toBe(murmur2);
  });

  it("hashes as Java's murmur2 and kafkajs's Long-based original do", () => {
    // Kafka's own test vectors (clients UtilsTest.testMurmur2).
    const java: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    const original = originals.murmur2 as (key: unknown) => number;
    for (const [key, hash] of java) {
      expect(murmur2(key), key).toBe(hash);
      expect(original(key), key).toBe(hash);
    }
    for (let i = 0; i < 2000; i++) {
      const key = randomKey();
      expect(murmur2(key)).toBe(original(key));
    }
    expect(murmur2(12345)).toBe(original(12345));
  });

  const partitionMetadata: PartitionMetadata[] = [0, 1, 2, 3, 4, 5].map((partitionId) => ({
    partitionId,
    leader: partitionId === 2 ? -1 : 1,
  }));
  type Partition = (args: {
    topic: string;
    partitionMetadata: PartitionMetadata[];
    message: { key?: unknown; partition?: number | null };
  }) => number;
  type Factory = (hash: (key: unknown) => number) => () => Partition;
  const ours = (require(partitionerModulePath) as Factory)(murmur2)();
  const theirs = (originals.createPartitioner as unknown as Factory)(
    originals.murmur2 as (k: unknown) => number,
  )();

  it('puts each keyed message where the original does, and keeps an explicit partition', () => {
    expect(require(partitionerModulePath)).not.toBe(originals.createPartitioner);
    for (let i = 0; i < 500; i++) {
      const message = { key: randomKey() };
      expect(ours({ topic: 't', partitionMetadata, message })).toBe(
        theirs({ topic: 't', partitionMetadata, message }),
      );
    }
    expect(ours({ topic: 't', partitionMetadata, message: { key: 'k', partition: 4 } })).toBe(4);
  });

  it('sends keyless messages round robin over the partitions that have a leader', () => {
    const seen = Array.from({ length: 10 }, () => ours({ topic: 'keyless', partitionMetadata, message: {} }));
    const available = [0, 1, 3, 4, 5];
    const start = available.indexOf(seen[0] as number);
    expect(start).toBeGreaterThanOrEqual(0);
    expect(seen).toEqual(seen.map((_, i) => available[(start + i) % available.length]));
    const leaderless = partitionMetadata.map((p) => ({ ...p, leader: -1 }));
    const next = [0, 1, 2].map(() => ours({ topic: 'keyless', partitionMetadata: leaderless, message: {} }));
    expect(next.map((p) => (p - (next[0] as number) + 6) % 6)).toEqual([0, 1, 2]);
  });
});

describe('kafkajs record headers written in place', () => {
  const Record = require(recordModulePath) as (r: RecordArgs) => Encoded;
  const original = originals.record as unknown as (r: RecordArgs) => Encoded;

  it('is the record encoder kafkajs uses', () => {
    expect(Record).not.toBe(original);
  });

  it('encodes every record as the original does', () => {
    const records: RecordArgs[] = [
      record,
      { ...record, offsetDelta: 4999, timestampDelta: 1234 },
      { key: null, value: null },
      { key: undefined, value: Buffer.alloc(0), headers: {} },
      { key: Buffer.from([0, 1, 2]), value: 'plain text value', headers: { 'é-key': 'välue ☃', empty: '' } },
      { key: 'k', value: 'v', headers: { multi: ['one', Buffer.from('two'), 'three'], none: [] } },
      { key: 'k', value: 'v'.repeat(70_000), headers: { big: 'h'.repeat(300) } },
      { key: 'k', value: 'v', timestampDelta: 2 ** 40 }, // a varlong beyond 32 bits
    ];
    for (const r of records) {
      expect(Record(r).buffer.equals(original(r).buffer), JSON.stringify(r).slice(0, 80)).toBe(true);
    }
  });

  it('leaves to the original what the original rejects', () => {
    for (const r of [
      { key: 'k', value: 'v', headers: { bad: null } },
      { key: 'k', value: 'v', headers: { bad: 42 } },
      { key: 42, value: 'v' },
    ] as RecordArgs[]) {
      expect(() => original(r)).toThrow();
      expect(() => Record(r)).toThrow();
    }
  });
});

describe('kafkajs fetched records decoded with numbers', () => {
  type Body = { readVarIntBytes(): Buffer; offset: number };
  const Body = Decoder as unknown as new (b: Buffer) => Body;
  const ours = require(recordDecoderModulePath) as (d: unknown, ctx?: RecordBatchContext) => unknown;
  const original = originals.decodeRecord as (d: unknown, ctx?: RecordBatchContext) => unknown;
  const encoded = (r: RecordArgs): Buffer => new Body(Record(r).buffer).readVarIntBytes();
  const batch: RecordBatchContext = {
    firstOffset: '1200',
    firstTimestamp: '1795000000000',
    maxTimestamp: '1795000009999',
    magicByte: 2,
    isControlBatch: false,
    timestampType: 0,
  };

  it('is the record decoder kafkajs uses', () => {
    expect(ours).not.toBe(original);
  });

  it('decodes every record as the original does, and leaves the decoder at the same place', () => {
    const headers = { multi: ['one', Buffer.from('two'), 'three'], 'é-key': 'välue ☃', empty: '' };
    const cases: [RecordArgs, RecordBatchContext][] = [
      [record, batch],
      [{ ...record, offsetDelta: 4999, timestampDelta: 1234 }, batch],
      [{ key: null, value: null, timestampDelta: -5 }, batch],
      [
        { key: 'k', value: 'v', headers },
        { ...batch, isControlBatch: true },
      ],
      [{ key: 'k', value: 'v', timestampDelta: 2 ** 40 }, batch], // 6-byte varlong: still numbers
      [{ key: 'k', value: 'v', timestampDelta: 2 ** 52 }, batch], // 8 bytes: the original's
      [
        { key: 'k', value: 'v', timestampDelta: 7 },
        { ...batch, timestampType: 1 },
      ], // LOG_APPEND_TIME
      [
        { key: 'k', value: 'v', timestampDelta: 7 },
        { ...batch, firstTimestamp: '-1' },
      ],
      [
        { key: 'k', value: 'v', offsetDelta: 9 },
        { ...batch, firstOffset: '9007199254740990' },
      ], // past 2^53
      [
        { key: 'k', value: 'v', offsetDelta: 1 },
        { ...batch, firstOffset: '9223372036854775806' },
      ],
      [{ key: 'k', value: 'v', headers: { ['__proto__']: 'x', after: 'y' } }, batch],
    ];
    for (const [r, ctx] of cases) {
      const body = encoded(r);
      const a = new Body(body);
      const b = new Body(body);
      const label = `${JSON.stringify(r).slice(0, 60)} ${JSON.stringify(ctx)}`;
      expect(ours(a, ctx), label).toStrictEqual(original(b, ctx));
      expect(a.offset, label).toBe(b.offset);
    }
  });

  it("keeps each batch's base apart when batches alternate (the base is cached per batch)", () => {
    const body = encoded({ key: 'k', value: 'v', offsetDelta: 3 });
    for (const firstOffset of ['10', '20', '10', '9007199254740993', '10']) {
      const ctx = { ...batch, firstOffset };
      expect(ours(new Body(body), ctx)).toStrictEqual(original(new Body(body), ctx));
    }
  });
});

describe('kafkajs large requests copied once less', () => {
  type Enc = {
    writeArray(a: unknown[], type?: string, length?: number): Enc;
    writeInt32(v: number): Enc;
    writeBytes(v: Buffer): Enc;
    buffer: Buffer;
  };
  const Encoder = require(encoderModulePath) as new () => Enc;
  const originalWriteArray = originals.writeArray as unknown as (
    this: Enc,
    a: unknown[],
    type?: string,
    length?: number,
  ) => Enc;
  const encoders = (sizes: number[]) =>
    sizes.map((size, i) => new Encoder().writeBytes(Buffer.alloc(size, 97 + i)));

  it('writes an array as the original does, Encoders or not', () => {
    const arrays: unknown[][] = [
      [],
      encoders([10, 200_000, 3, 90_000]),
      [1, 'two', ...encoders([70_000])],
      [5, 6, 7],
    ];
    for (const array of arrays) {
      const ours = new Encoder().writeInt32(42).writeArray(array).buffer;
      const theirs = originalWriteArray.call(new Encoder().writeInt32(42), array).buffer;
      expect(ours.equals(theirs)).toBe(true);
    }
    expect(new Encoder().writeArray(encoders([5]), undefined, 3).buffer.readInt32BE(0)).toBe(3);
    expect(() => new Encoder().writeArray([null])).toThrow();
  });

  it('frames a multi-megabyte produce request byte for byte as the original', async () => {
    const produce = require('@fraudlink/kafkajs/src/protocol/requests/produce/v3/request.js') as (
      args: object,
    ) => {
      apiKey: number;
      apiVersion: number;
      encode(): Promise<Enc>;
    };
    // With their own timestamps, record batches do not take the time they are built.
    const messages = Array.from({ length: 3000 }, (_, i) => ({
      ...record,
      key: `${record.key}-${i}`,
      timestamp: String(1_700_000_000_000 + i),
    }));
    const request = () =>
      produce({
        transactionalId: 'tx',
        acks: -1,
        timeout: 30_000,
        topicData: [0, 1, 2].map((t) => ({
          topic: `topic-${t}`,
          partitions: [0, 1, 2].map((partition) => ({ partition, firstSequence: 0, messages })),
        })),
      });
    const frame = require(requestModulePath) as RequestFramer;
    expect(frame).not.toBe(originals.frameRequest);
    const args = { correlationId: 7, clientId: 'fraudlink' };
    const ours = (await frame({ ...args, request: request() as never })).buffer;
    const theirs = (await (originals.frameRequest as RequestFramer)({ ...args, request: request() as never }))
      .buffer;
    expect(ours.length).toBeGreaterThan(4 * 1024 * 1024);
    expect(ours.readInt32BE(0)).toBe(ours.length - 4);
    expect(ours.equals(theirs)).toBe(true);
  });
});

interface Queue {
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  throttledUntil: number;
  pending: unknown[];
  push(request: { entry: { correlationId: number }; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
}
type QueueClass = new (options: object) => Queue;

describe('kafkajs request queue without a timer loop', () => {
  const RequestQueue = require(requestQueueModulePath) as QueueClass;
  const quiet = { debug() {}, warn() {}, info() {}, error() {} };
  const newQueue = () =>
    new RequestQueue({
      maxInFlightRequests: 1,
      requestTimeout: 30_000,
      enforceRequestTimeout: false,
      clientId: 'fraudlink',
      broker: 'localhost:9092',
      logger: quiet,
    });
  /** Pushes a request; `sent` resolves when the queue writes it to the socket. */
  const push = (queue: Queue, correlationId: number) => {
    let markSent!: () => void;
    const sent = new Promise<void>((resolve) => {
      markSent = resolve;
    });
    const entry = { correlationId, resolve() {}, reject() {} };
    queue.push({ entry, expectResponse: true, sendRequest: markSent });
    return sent;
  };
  const respond = (queue: Queue, correlationId: number) =>
    queue.fulfillRequest({ correlationId, payload: Buffer.alloc(0), size: 0 });

  it('leaves no check scheduled after a response when nothing is pending (kafkajs polled every 1 ms)', async () => {
    const queue = newQueue();
    await push(queue, 1);
    respond(queue, 1);
    expect(queue.throttleCheckTimeoutId).toBeNull();

    const unfixed = newQueue();
    (originals.scheduleCheckPendingRequests as () => void).call(unfixed);
    expect(unfixed.throttleCheckTimeoutId).not.toBeNull();
    unfixed.destroy();
  });

  it('sends a request that waits for the in-flight slot when the response frees it', async () => {
    const queue = newQueue();
    await push(queue, 1);
    const second = push(queue, 2);
    expect(queue.pending).toHaveLength(1);
    respond(queue, 1);
    await second; // the response freed the slot and sent it
    respond(queue, 2);
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });

  it('sends a request held by client-side throttling once the throttle ends, not before', async () => {
    const queue = newQueue();
    queue.maybeThrottle(30);
    const until = queue.throttledUntil;
    await push(queue, 1);
    expect(Date.now()).toBeGreaterThanOrEqual(until);
    respond(queue, 1);
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });
});

describe("kafkajs with Kafka's error codes since 2.2.4", () => {
  const { createErrorFromCode } = require(errorModulePath) as {
    createErrorFromCode(code: number): Error & { type: string; code: number; retriable: boolean };
  };

  it('names a code kafkajs did not know with its Kafka type, message and retriability', () => {
    const abortable = createErrorFromCode(120);
    expect(abortable).toMatchObject({
      name: 'KafkaJSProtocolError',
      type: 'TRANSACTION_ABORTABLE',
      code: 120,
    });
    expect(abortable.retriable).toBe(false);
    expect(abortable.message).toMatch(/^The server encountered an error with the transaction/);
    expect(createErrorFromCode(89)).toMatchObject({ type: 'THROTTLING_QUOTA_EXCEEDED', retriable: true });
    expect(createErrorFromCode(133)).toMatchObject({ type: 'SHARE_SESSION_LIMIT_REACHED', retriable: true });
  });

  it("keeps kafkajs's own entries and its answer for a code Kafka has not defined", () => {
    expect(createErrorFromCode(88)).toMatchObject({ type: 'UNSTABLE_OFFSET_COMMIT', code: 88 });
    expect(createErrorFromCode(999)).toMatchObject({ type: 'KAFKAJS_UNKNOWN_ERROR_CODE', code: -99 });
  });

  it('maps PRODUCER_FENCED to FencedError and TRANSACTION_ABORTABLE to a final KafkaError', () => {
    expect(toKafkaError(createErrorFromCode(90), 'commit')).toBeInstanceOf(FencedError);
    const abortable = toKafkaError(createErrorFromCode(120), 'commit');
    expect(abortable).toBeInstanceOf(KafkaError);
    expect(abortable).toMatchObject({ retriable: false });
    expect(abortable.message).toMatch(/^commit: The server encountered an error with the transaction/);
  });
});
