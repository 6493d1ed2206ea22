import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import '../../src/kafka/kafkajs.ts';
import { createEosManager, offsetsMemberships } from '../../src/kafka/eos-manager.ts';
import { apiVersionsV3 } from '../../src/kafka/protocol/api-versions-v3.ts';
import { endTxnV5 } from '../../src/kafka/protocol/end-txn-v5.ts';
import type { Versions } from '../../src/kafka/protocol/flexible-request.ts';
import { offsetFetchV7 } from '../../src/kafka/protocol/offset-fetch-v7.ts';
import { produceV12 } from '../../src/kafka/protocol/produce-v12.ts';
import { txnOffsetCommitFlexible } from '../../src/kafka/protocol/txn-offset-commit.ts';
import {
  finalizedFeatureLevel,
  keepTransactionProtocolV1,
  releaseTransactionProtocol,
  transactionV2Available,
  transactionV2For,
  withFinalizedFeatures,
} from '../../src/kafka/transaction-v2.ts';

const require = createRequire(import.meta.url);

interface Enc {
  buffer: Buffer;
  writeInt8(v: number): Enc;
  writeInt16(v: number): Enc;
  writeInt32(v: number): Enc;
  writeInt64(v: unknown): Enc;
  writeUVarInt(v: number): Enc;
  writeUVarIntString(v: string | null): Enc;
}
interface Dec {
  offset: number;
  readInt16(): number;
  readInt32(): number;
  readInt64(): { toString(): string };
  readUVarInt(): number;
  readUVarIntString(): string | null;
  readBytes(n: number): Buffer;
  readString(): string | null;
  readArray<T>(reader: (d: Dec) => T): T[];
}
const Encoder = require('@fraudlink/kafkajs/src/protocol/encoder.js') as new () => Enc;
const Decoder = require('@fraudlink/kafkajs/src/protocol/decoder.js') as new (b: Buffer) => Dec;
const kafkajsProduce = require('@fraudlink/kafkajs/src/protocol/requests/produce/index.js') as {
  protocol(v: { version: number }): (args: object) => { request: { encode(): Promise<Enc> } };
};

const bytes = (...parts: (Enc | Buffer)[]) =>
  Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : p.buffer)));
/** A tagged field as Kafka writes it: tag, size, then the bytes (the size is not a compact length). */
const tagged = (tag: number, body: Enc) =>
  new Encoder().writeUVarInt(tag).writeUVarInt(body.buffer.length).buffer;

const APIS = { Produce: 0, EndTxn: 26, TxnOffsetCommit: 28 };

function versions(
  featureLevel: number | undefined,
  max = { produce: 12, endTxn: 5, txnOffsetCommit: 5 },
): Versions {
  const v: Versions = {
    [APIS.Produce]: { minVersion: 3, maxVersion: max.produce },
    [APIS.EndTxn]: { minVersion: 0, maxVersion: max.endTxn },
    [APIS.TxnOffsetCommit]: { minVersion: 0, maxVersion: max.txnOffsetCommit },
  };
  if (featureLevel !== undefined) {
    const features = new Map([['transaction.version', featureLevel]]);
    withFinalizedFeatures(v, features);
  }
  return v;
}

describe('ApiVersions v3', () => {
  const apiKeyEntry = (key: number, min: number, max: number) =>
    new Encoder().writeInt16(key).writeInt16(min).writeInt16(max).writeUVarInt(0).buffer;
  const feature = (name: string, max: number, min: number) =>
    new Encoder().writeUVarIntString(name).writeInt16(max).writeInt16(min).writeUVarInt(0).buffer;

  it('reads the API versions and the finalized features, skipping the tagged fields it does not use', async () => {
    const supported = new Encoder().writeUVarInt(2).writeUVarIntString('x'); // tag 0, not read
    const finalized = new Encoder().writeUVarInt(3);
    const featureBytes = bytes(feature('metadata.version', 27, 27), feature('transaction.version', 2, 2));
    const finalizedBody = bytes(finalized, featureBytes);
    const body = bytes(
      new Encoder().writeInt16(0).writeUVarInt(3),
      apiKeyEntry(0, 3, 13),
      apiKeyEntry(26, 0, 5),
      new Encoder().writeInt32(0).writeUVarInt(3),
      tagged(0, supported),
      supported,
      tagged(1, new Encoder().writeInt64(72)),
      new Encoder().writeInt64(72),
      new Encoder().writeUVarInt(2).writeUVarInt(finalizedBody.length),
      finalizedBody,
    );
    const { response } = apiVersionsV3('2.2.4');
    const decoded = (await response.decode(body)) as {
      apiVersions: unknown[];
      finalizedFeatures: Map<string, number>;
    };
    expect(decoded.apiVersions).toEqual([
      { apiKey: 0, minVersion: 3, maxVersion: 13 },
      { apiKey: 26, minVersion: 0, maxVersion: 5 },
    ]);
    expect([...decoded.finalizedFeatures]).toEqual([
      ['metadata.version', 27],
      ['transaction.version', 2],
    ]);
  });

  it("throws the broker's error, reading only its code (a refused version is answered in v0)", async () => {
    const { response } = apiVersionsV3('2.2.4');
    const body = bytes(new Encoder().writeInt16(35).writeInt32(1), apiKeyEntry(18, 0, 2));
    await expect(response.decode(body).then((d) => response.parse(d))).rejects.toMatchObject({
      type: 'UNSUPPORTED_VERSION',
    });
  });

  it('names the client in the request body, after the empty tagged fields of the request header', async () => {
    const encoded = (await apiVersionsV3('2.2.4').request.encode()) as unknown as Enc;
    expect(encoded.buffer).toEqual(
      new Encoder().writeUVarInt(0).writeUVarIntString('kafkajs').writeUVarIntString('2.2.4').writeUVarInt(0)
        .buffer,
    );
  });
});

describe('the choice of the transaction protocol', () => {
  it('takes v2 only where transaction.version 2 is finalized and the broker offers every v2 request', () => {
    expect(transactionV2Available(versions(2))).toBe(true);
    expect(transactionV2Available(versions(1))).toBe(false);
    expect(transactionV2Available(versions(undefined))).toBe(false);
    expect(transactionV2Available(versions(2, { produce: 11, endTxn: 5, txnOffsetCommit: 5 }))).toBe(false);
    expect(transactionV2Available(versions(2, { produce: 12, endTxn: 4, txnOffsetCommit: 5 }))).toBe(false);
    expect(transactionV2Available(versions(2, { produce: 12, endTxn: 5, txnOffsetCommit: 4 }))).toBe(false);
    expect(transactionV2Available(null)).toBe(false);
    expect(finalizedFeatureLevel(versions(undefined), 'transaction.version')).toBe(0);
  });
});

describe('Produce v12', () => {
  const args = {
    acks: -1,
    timeout: 30000,
    transactionalId: 'tx-1',
    producerId: 4242,
    producerEpoch: 7,
    compression: 0,
    topicData: [
      {
        topic: 'replies',
        partitions: [
          {
            partition: 2,
            firstSequence: 5,
            messages: [
              { key: 'k1', value: Buffer.from('v1'), timestamp: 1_700_000_000_000, headers: { h: 'x' } },
              { key: 'k2', value: Buffer.from('v2'), timestamp: 1_700_000_000_003 },
            ],
          },
        ],
      },
    ],
  };

  it("carries kafkajs's own record batch (Produce v7's) in the flexible layout", async () => {
    const v12 = (await produceV12(args).request.encode()) as unknown as Enc;
    const v7 = await kafkajsProduce.protocol({ version: 7 })(args).request.encode();

    const d = new Decoder(v12.buffer);
    expect(d.readUVarInt()).toBe(0); // request header tagged fields
    expect(d.readUVarIntString()).toBe('tx-1');
    expect(d.readInt16()).toBe(-1);
    expect(d.readInt32()).toBe(30000);
    expect(d.readUVarInt()).toBe(2); // one topic
    expect(d.readUVarIntString()).toBe('replies');
    expect(d.readUVarInt()).toBe(2); // one partition
    expect(d.readInt32()).toBe(2);
    const batch12 = d.readBytes(d.readUVarInt() - 1);
    expect(d.readUVarInt()).toBe(0); // partition tags
    expect(d.readUVarInt()).toBe(0); // topic tags
    expect(d.readUVarInt()).toBe(0); // request tags
    expect(d.offset).toBe(v12.buffer.length);

    const o = new Decoder(v7.buffer);
    o.readString();
    o.readInt16();
    o.readInt32();
    const [batch7] = o.readArray((t) => {
      t.readString();
      return t.readArray((p) => {
        p.readInt32();
        return p.readBytes(p.readInt32());
      })[0];
    });
    expect(batch12).toEqual(batch7);
  });

  it('reads a response whose partition carries a tagged field (the current leader), and throws its error', async () => {
    const leader = new Encoder().writeInt32(1).writeInt32(5).writeUVarInt(0);
    const partition = (code: number, withLeader: boolean) =>
      bytes(
        new Encoder()
          .writeInt32(2)
          .writeInt16(code)
          .writeInt64(41)
          .writeInt64(-1)
          .writeInt64(0)
          .writeUVarInt(1) // no record errors
          .writeUVarIntString(null)
          .writeUVarInt(withLeader ? 1 : 0),
        withLeader ? tagged(0, leader) : Buffer.alloc(0),
        withLeader ? leader.buffer : Buffer.alloc(0),
      );
    const response = (code: number) =>
      bytes(
        new Encoder().writeUVarInt(0).writeUVarInt(2).writeUVarIntString('replies').writeUVarInt(3),
        partition(0, true),
        partition(code, false),
        new Encoder().writeUVarInt(0).writeInt32(7).writeUVarInt(0),
      );
    const { response: codec } = produceV12(args);

    const ok = await codec.decode(response(0));
    expect(ok).toEqual({
      topics: [
        {
          topicName: 'replies',
          partitions: [
            { partition: 2, errorCode: 0, baseOffset: '41', logAppendTime: '-1', logStartOffset: '0' },
            { partition: 2, errorCode: 0, baseOffset: '41', logAppendTime: '-1', logStartOffset: '0' },
          ],
        },
      ],
      throttleTime: 0,
      clientSideThrottleTime: 7,
    });
    await expect(codec.decode(response(6)).then((d) => codec.parse(d))).rejects.toMatchObject({
      type: 'NOT_LEADER_FOR_PARTITION',
    });
  });
});

describe('EndTxn v5 and TxnOffsetCommit v5', () => {
  it('ends a transaction and reads the producer id and epoch for the next one', async () => {
    const { request, response } = endTxnV5({
      transactionalId: 'tx-1',
      producerId: 4242,
      producerEpoch: 7,
      transactionResult: true,
    });
    expect(((await request.encode()) as unknown as Enc).buffer).toEqual(
      new Encoder()
        .writeUVarInt(0)
        .writeUVarIntString('tx-1')
        .writeInt64(4242)
        .writeInt16(7)
        .writeInt8(1)
        .writeUVarInt(0).buffer,
    );
    const body = new Encoder()
      .writeUVarInt(0)
      .writeInt32(0)
      .writeInt16(0)
      .writeInt64(4242)
      .writeInt16(8)
      .writeUVarInt(0);
    expect(await response.decode(body.buffer)).toEqual({
      throttleTime: 0,
      clientSideThrottleTime: 0,
      errorCode: 0,
      producerId: '4242',
      producerEpoch: 8,
    });
    const fenced = new Encoder()
      .writeUVarInt(0)
      .writeInt32(0)
      .writeInt16(90)
      .writeInt64(-1)
      .writeInt16(-1)
      .writeUVarInt(0);
    await expect(response.decode(fenced.buffer).then((d) => response.parse(d))).rejects.toThrow();
  });

  /** The TxnOffsetCommit of tx-1 (producer 4242, epoch 7) committing requests[1] = 100 for group g. */
  const commitArgs = {
    transactionalId: 'tx-1',
    groupId: 'g',
    producerId: 4242,
    producerEpoch: 7,
    topics: [{ topic: 'requests', partitions: [{ partition: 1, offset: '100' }] }],
  };
  /** Its bytes (v3 to v5 alike), with the member fields given. */
  const commitBytes = (generationId: number, memberId: string, groupInstanceId: string | null) =>
    bytes(
      new Encoder()
        .writeUVarInt(0)
        .writeUVarIntString('tx-1')
        .writeUVarIntString('g')
        .writeInt64(4242)
        .writeInt16(7)
        .writeInt32(generationId)
        .writeUVarIntString(memberId)
        .writeUVarIntString(groupInstanceId)
        .writeUVarInt(2)
        .writeUVarIntString('requests')
        .writeUVarInt(2)
        .writeInt32(1)
        .writeInt64('100')
        .writeInt32(-1)
        .writeUVarIntString(null)
        .writeUVarInt(0)
        .writeUVarInt(0)
        .writeUVarInt(0),
    );

  it('commits offsets with no generation or member (the coordinator checks neither) and throws a partition error', async () => {
    const { request, response } = txnOffsetCommitFlexible({ version: 5, ...commitArgs });
    expect(((await request.encode()) as unknown as Enc).buffer).toEqual(commitBytes(-1, '', null));
    const answer = (code: number) =>
      new Encoder()
        .writeUVarInt(0)
        .writeInt32(0)
        .writeUVarInt(2)
        .writeUVarIntString('requests')
        .writeUVarInt(2)
        .writeInt32(1)
        .writeInt16(code)
        .writeUVarInt(0)
        .writeUVarInt(0)
        .writeUVarInt(0).buffer;
    expect(await response.decode(answer(0))).toEqual({
      throttleTime: 0,
      clientSideThrottleTime: 0,
      topics: [{ topic: 'requests', partitions: [{ partition: 1, errorCode: 0 }] }],
    });
    await expect(response.decode(answer(22)).then((d) => response.parse(d))).rejects.toMatchObject({
      type: 'ILLEGAL_GENERATION',
    });
  });

  it("writes the member's generation, id and instance id at the version asked", async () => {
    const { request } = txnOffsetCommitFlexible({
      version: 3,
      ...commitArgs,
      membership: { generationId: 12, memberId: 'member-1', groupInstanceId: 'pod-0' },
    });
    expect(request.apiVersion).toBe(3);
    expect(((await request.encode()) as unknown as Enc).buffer).toEqual(commitBytes(12, 'member-1', 'pod-0'));
  });
});

const { createErrorFromCode } = require('@fraudlink/kafkajs/src/protocol/error.js') as {
  createErrorFromCode(code: number): Error;
};
const { KafkaJSRequestTimeoutError, KafkaJSConnectionClosedError } =
  require('@fraudlink/kafkajs/src/errors.js') as {
    KafkaJSRequestTimeoutError: new (message: string) => Error;
    KafkaJSConnectionClosedError: new (message: string) => Error;
  };

/**
 * A transaction coordinator (and group coordinator) that records what it is asked. `faults` are
 * EndTxn's and TxnOffsetCommit's answers, one per call, before they succeed: an Error is thrown
 * before the coordinator acts on the request; 'lost' (EndTxn only) acts on it (ends the
 * transaction, bumps the epoch on v2) and then throws a request timeout, as when the response never
 * arrives. A repeated EndTxn with the epoch
 * before the bump is answered with the bumped one, as Kafka's coordinator answers a v2 retry.
 */
function fakeCluster(v: Versions) {
  const calls: string[] = [];
  const faults = { endTxn: [] as (Error | 'lost')[], txnOffsetCommit: [] as Error[] };
  let epoch = 0;
  let producerId = 4242;
  let lookups = 0;
  const endTxnFault = (): 'lost' | undefined => {
    const fault = faults.endTxn.shift();
    if (fault instanceof Error) throw fault;
    return fault;
  };
  const lost = () => new KafkaJSRequestTimeoutError('Request EndTxn timed out');
  const broker = {
    nodeId: 1,
    versions: v,
    async initProducerId() {
      calls.push('InitProducerId');
      return { producerId, producerEpoch: epoch };
    },
    async addPartitionsToTxn(a: { producerEpoch: number; topics: unknown }) {
      calls.push(`AddPartitionsToTxn e${a.producerEpoch} ${JSON.stringify(a.topics)}`);
    },
    async addOffsetsToTxn(a: { producerEpoch: number }) {
      calls.push(`AddOffsetsToTxn e${a.producerEpoch}`);
    },
    async txnOffsetCommit(a: { producerEpoch: number }) {
      calls.push(`TxnOffsetCommit e${a.producerEpoch}`);
      const fault = faults.txnOffsetCommit.shift();
      if (fault) throw fault;
    },
    async txnOffsetCommitFlexible(a: {
      version: number;
      producerEpoch: number;
      membership?: { memberId: string; generationId: number };
    }) {
      const member = a.membership ? ` ${a.membership.memberId}/${a.membership.generationId}` : '';
      calls.push(`TxnOffsetCommitV${a.version} e${a.producerEpoch}${member}`);
      const fault = faults.txnOffsetCommit.shift();
      if (fault) throw fault;
    },
    async endTxn(a: { producerEpoch: number; transactionResult: boolean }) {
      calls.push(`EndTxn e${a.producerEpoch} ${a.transactionResult ? 'commit' : 'abort'}`);
      if (endTxnFault() === 'lost') throw lost();
    },
    async endTxnV5(a: { producerEpoch: number; transactionResult: boolean }) {
      calls.push(`EndTxnV5 e${a.producerEpoch} ${a.transactionResult ? 'commit' : 'abort'}`);
      const fault = endTxnFault();
      if (a.producerEpoch === epoch - 1) {
        // A retry of the EndTxn that bumped the epoch: the same answer again.
      } else if (epoch === 0x7ffe) {
        producerId += 1;
        epoch = 0;
      } else {
        epoch += 1;
      }
      if (fault === 'lost') throw lost();
      return {
        throttleTime: 0,
        clientSideThrottleTime: 0,
        errorCode: 0,
        producerId: String(producerId),
        producerEpoch: epoch,
      };
    },
    exhaustEpoch() {
      epoch = 0x7ffe;
    },
  };
  const cluster = {
    retry: { initialRetryTime: 1, retries: 5 },
    async refreshMetadataIfNecessary() {},
    async findGroupCoordinator() {
      lookups += 1;
      return broker;
    },
    async findControllerBroker() {
      return broker;
    },
  };
  const logger = { debug() {} };
  const eos = createEosManager({ logger, cluster, transactional: true, transactionalId: 'tx-1' });
  return { eos, calls, broker, faults, lookups: () => lookups };
}

const partitions = [{ topic: 'replies', partitions: [{ partition: 0 }, { partition: 1 }] }];
const offsets = {
  consumerGroupId: 'g',
  topics: [{ topic: 'requests', partitions: [{ partition: 0, offset: '5' }] }],
};

/** A fake cluster whose manager has begun a transaction and enrolled `partitions` in it. */
/** A fake cluster whose producer has its id and has begun a transaction. */
async function begun(v: Versions) {
  const fake = fakeCluster(v);
  await fake.eos.initProducerId();
  fake.eos.beginTransaction();
  return fake;
}

/** begun, with the reply partitions enrolled in the transaction. */
async function enrolled(v: Versions) {
  const fake = await begun(v);
  await fake.eos.addPartitionsToTransaction(partitions);
  return fake;
}

describe('the transaction manager', () => {
  it('on v2 enrols nothing itself and takes the bumped epoch from EndTxn, sequences starting again', async () => {
    const { eos, calls } = await enrolled(versions(2));
    eos.updateSequence('replies', 0, 3);
    await eos.sendOffsets(offsets);
    await eos.commit();
    expect(eos.getProducerEpoch()).toBe(1);
    expect(eos.getSequence('replies', 0)).toBe(0);

    eos.beginTransaction();
    await eos.addPartitionsToTransaction(partitions);
    await eos.abort();
    expect(eos.getProducerEpoch()).toBe(2);
    expect(calls).toEqual([
      'InitProducerId',
      'TxnOffsetCommitV5 e0',
      'EndTxnV5 e0 commit',
      'EndTxnV5 e1 abort',
    ]);
  });

  it('on v2 takes the new producer id the coordinator gives once the epoch is exhausted', async () => {
    const { eos, broker } = fakeCluster(versions(2));
    await eos.initProducerId();
    broker.exhaustEpoch();
    eos.beginTransaction();
    await eos.addPartitionsToTransaction(partitions);
    await eos.commit();
    expect([eos.getProducerId(), eos.getProducerEpoch()]).toEqual(['4243', 0]);
  });

  it("on v1 is kafkajs's flow: both Add requests, and the epoch kept", async () => {
    const { eos, calls } = await begun(versions(1));
    eos.updateSequence('replies', 0, 3);
    await eos.addPartitionsToTransaction(partitions);
    await eos.addPartitionsToTransaction(partitions); // already in: not asked again
    await eos.sendOffsets(offsets);
    await eos.commit();
    expect(eos.getProducerEpoch()).toBe(0);
    expect(eos.getSequence('replies', 0)).toBe(3);
    expect(calls).toEqual([
      'InitProducerId',
      'AddPartitionsToTxn e0 [{"topic":"replies","partitions":[0,1]}]',
      'AddOffsetsToTxn e0',
      'TxnOffsetCommit e0',
      'EndTxn e0 commit',
    ]);
  });

  it('keeps the protocol a transaction began with when the cluster changes under it', async () => {
    const v = versions(2);
    const { eos, calls, broker } = await enrolled(v);
    broker.versions = versions(1); // e.g. a reconnect to a broker of the old protocol
    await eos.sendOffsets(offsets);
    await eos.commit();
    eos.beginTransaction();
    await eos.sendOffsets(offsets);
    await eos.commit();
    expect(calls).toEqual([
      'InitProducerId',
      'TxnOffsetCommitV5 e0',
      'EndTxnV5 e0 commit',
      'AddOffsetsToTxn e1',
      'TxnOffsetCommit e1',
      'EndTxn e1 commit',
    ]);
  });

  it('keeps a transactional id kept on v1 there, on a cluster of v2, until released', async () => {
    keepTransactionProtocolV1('tx-1');
    try {
      const { eos, calls } = await enrolled(versions(2));
      await eos.commit();
      expect(calls).toEqual([
        'InitProducerId',
        'AddPartitionsToTxn e0 [{"topic":"replies","partitions":[0,1]}]',
        'EndTxn e0 commit',
      ]);
      expect(transactionV2For('tx-1', versions(2))).toBe(false);
      expect(transactionV2For('tx-2', versions(2))).toBe(true);
    } finally {
      releaseTransactionProtocol('tx-1');
    }
    expect(transactionV2For('tx-1', versions(2))).toBe(true);
  });

  it('retries EndTxn after a moved or loading coordinator and a transaction still completing, looking up again', async () => {
    for (const level of [1, 2]) {
      const { eos, calls, faults, lookups } = await enrolled(versions(level));
      faults.endTxn.push(
        createErrorFromCode(16),
        createErrorFromCode(14),
        createErrorFromCode(51),
        new KafkaJSConnectionClosedError('Closed connection'), // a broker restarting gracefully
      );
      const before = lookups();
      await eos.commit();
      const endTxn = level === 2 ? 'EndTxnV5' : 'EndTxn';
      expect(calls.filter((c) => c.startsWith('EndTxn'))).toEqual(Array(5).fill(`${endTxn} e0 commit`));
      expect(lookups() - before).toBe(5);
      expect(eos.getProducerEpoch()).toBe(level === 2 ? 1 : 0);
    }
  });

  it('on v2 retries an EndTxn whose response was lost, and takes the epoch the coordinator bumped once', async () => {
    const { eos, calls, faults } = await enrolled(versions(2));
    faults.endTxn.push('lost');
    await eos.commit();
    expect(eos.getProducerEpoch()).toBe(1);
    eos.beginTransaction();
    await eos.addPartitionsToTransaction(partitions);
    await eos.commit();
    expect(eos.getProducerEpoch()).toBe(2);
    expect(calls).toEqual([
      'InitProducerId',
      'EndTxnV5 e0 commit',
      'EndTxnV5 e0 commit',
      'EndTxnV5 e1 commit',
    ]);
  });

  it("retries TxnOffsetCommit after a moved or loading coordinator (kafkajs's names for them never matched)", async () => {
    for (const level of [1, 2]) {
      const { eos, calls, faults } = await begun(versions(level));
      faults.txnOffsetCommit.push(createErrorFromCode(16), createErrorFromCode(15), createErrorFromCode(14));
      await eos.sendOffsets(offsets);
      const commit = level === 2 ? 'TxnOffsetCommitV5' : 'TxnOffsetCommit';
      expect(calls.filter((c) => c.startsWith('TxnOffsetCommit'))).toEqual(Array(4).fill(`${commit} e0`));
    }
  });

  it('retries TxnOffsetCommit answered REQUEST_TIMED_OUT after a new lookup, and any other retriable answer, as the Java client does', async () => {
    for (const level of [1, 2]) {
      const { eos, calls, faults, lookups } = await begun(versions(level));
      // REQUEST_TIMED_OUT (a group coordinator before Kafka 4.0), NOT_ENOUGH_REPLICAS_AFTER_APPEND.
      faults.txnOffsetCommit.push(createErrorFromCode(7), createErrorFromCode(20));
      const before = lookups();
      await eos.sendOffsets(offsets);
      const commit = level === 2 ? 'TxnOffsetCommitV5' : 'TxnOffsetCommit';
      expect(calls.filter((c) => c.startsWith('TxnOffsetCommit'))).toEqual(Array(3).fill(`${commit} e0`));
      // The transaction coordinator (again for AddOffsetsToTxn on v1) and the group's, then the
      // group's again after REQUEST_TIMED_OUT only.
      expect(lookups() - before).toBe(level === 2 ? 3 : 4);
    }
  });

  it('does not retry a TxnOffsetCommit the coordinator refused (a stale member, fenced)', async () => {
    for (const code of [22, 25, 90]) {
      const { eos, calls, faults } = await begun(versions(2));
      faults.txnOffsetCommit.push(createErrorFromCode(code));
      await expect(eos.sendOffsets(offsets)).rejects.toMatchObject({ code });
      expect(calls).toEqual(['InitProducerId', 'TxnOffsetCommitV5 e0']);
    }
  });

  it("sends the consumer group member with the offsets: v5 on v2, v4 or v3 on v1 where offered, kafkajs's v0 elsewhere", async () => {
    const cases = [
      { v: versions(2), expected: ['TxnOffsetCommitV5 e0 m-1/3', 'TxnOffsetCommitV5 e0'] },
      { v: versions(1), expected: ['TxnOffsetCommitV4 e0 m-1/3', 'TxnOffsetCommit e0'] },
      {
        v: versions(undefined, { produce: 8, endTxn: 3, txnOffsetCommit: 3 }), // Kafka 2.5 to 3.5
        expected: ['TxnOffsetCommitV3 e0 m-1/3', 'TxnOffsetCommit e0'],
      },
      {
        v: versions(undefined, { produce: 8, endTxn: 2, txnOffsetCommit: 2 }), // before Kafka 2.5
        expected: ['TxnOffsetCommit e0', 'TxnOffsetCommit e0'],
      },
    ];
    for (const { v, expected } of cases) {
      const { eos, calls } = await begun(v);
      const topics = [{ topic: 'requests', partitions: [{ partition: 0, offset: '5' }] }];
      offsetsMemberships.set(topics, { generationId: 3, memberId: 'm-1' });
      await eos.sendOffsets({ consumerGroupId: 'g', topics });
      await eos.sendOffsets(offsets); // no member given
      expect(calls.filter((c) => c.startsWith('TxnOffsetCommit'))).toEqual(expected);
    }
  });

  it('does not retry an EndTxn the coordinator refused (fenced, invalid state)', async () => {
    for (const code of [90, 48]) {
      const { eos, calls, faults } = await enrolled(versions(2));
      faults.endTxn.push(createErrorFromCode(code));
      await expect(eos.commit()).rejects.toMatchObject({ code });
      expect(calls).toEqual(['InitProducerId', 'EndTxnV5 e0 commit']);
    }
  });

  it('sends no EndTxn for a transaction that enrolled nothing, on either protocol', async () => {
    for (const level of [1, 2]) {
      const { eos, calls } = await begun(versions(level));
      await eos.commit();
      eos.beginTransaction();
      await eos.abort();
      expect(calls).toEqual(['InitProducerId']);
    }
  });
});

describe('OffsetFetch v7', () => {
  it('asks for stable offsets and reads them as kafkajs does, throwing UNSTABLE_OFFSET_COMMIT', async () => {
    const { request, response } = offsetFetchV7({
      groupId: 'g',
      topics: [{ topic: 'requests', partitions: [{ partition: 0 }, { partition: 2 }] }],
    });
    expect(((await request.encode()) as unknown as Enc).buffer).toEqual(
      new Encoder()
        .writeUVarInt(0)
        .writeUVarIntString('g')
        .writeUVarInt(2) // one topic
        .writeUVarIntString('requests')
        .writeUVarInt(3) // two partitions
        .writeInt32(0)
        .writeInt32(2)
        .writeUVarInt(0)
        .writeInt8(1) // RequireStable
        .writeUVarInt(0).buffer,
    );
    const answer = (code: number) =>
      new Encoder()
        .writeUVarInt(0)
        .writeInt32(0)
        .writeUVarInt(2)
        .writeUVarIntString('requests')
        .writeUVarInt(3)
        .writeInt32(0)
        .writeInt64(41)
        .writeInt32(-1)
        .writeUVarIntString('')
        .writeInt16(0)
        .writeUVarInt(0)
        .writeInt32(2)
        .writeInt64(-1)
        .writeInt32(-1)
        .writeUVarIntString(null)
        .writeInt16(code)
        .writeUVarInt(0)
        .writeUVarInt(0)
        .writeInt16(0)
        .writeUVarInt(0).buffer;
    expect(await response.decode(answer(0))).toEqual({
      throttleTime: 0,
      clientSideThrottleTime: 0,
      responses: [
        {
          topic: 'requests',
          partitions: [
            { partition: 0, offset: '41', metadata: '', errorCode: 0 },
            { partition: 2, offset: '-1', metadata: null, errorCode: 0 },
          ],
        },
      ],
      errorCode: 0,
    });
    await expect(response.decode(answer(88)).then((d) => response.parse(d))).rejects.toMatchObject({
      type: 'UNSTABLE_OFFSET_COMMIT',
    });
  });
});

describe("kafkajs's Broker with the v2 requests installed", () => {
  // Importing kafkajs.ts installs them, as every kafkajs client of fraudlink gets them.
  const Broker = require('@fraudlink/kafkajs/src/broker/index.js') as new (
    options: object,
  ) => {
    versions: Versions | null;
    apiVersions(): Promise<Versions>;
    produce(args: object): Promise<unknown>;
  };
  const { createErrorFromCode } = require('@fraudlink/kafkajs/src/protocol/error.js') as {
    createErrorFromCode(code: number): Error;
  };
  const logger = { namespace: () => ({ debug() {}, info() {}, warn() {}, error() {} }) };

  /** A broker whose connection answers each request with `answer(apiName, apiVersion)`. */
  function brokerAnswering(answer: (apiName: string, apiVersion: number) => unknown) {
    const sent: string[] = [];
    const connectionPool = {
      connectionTimeout: 1000,
      host: 'fake',
      port: 9092,
      async send({ request }: { request: { apiName: string; apiVersion: number } }) {
        sent.push(`${request.apiName} v${request.apiVersion}`);
        return answer(request.apiName, request.apiVersion);
      },
    };
    return { broker: new Broker({ connectionPool, logger }), sent };
  }

  it('asks ApiVersions v3 and keeps the finalized features with the versions', async () => {
    const { broker, sent } = brokerAnswering(() => ({
      errorCode: 0,
      apiVersions: [{ apiKey: 0, minVersion: 3, maxVersion: 13 }],
      finalizedFeatures: new Map([['transaction.version', 2]]),
    }));
    const v = await broker.apiVersions();
    expect(sent).toEqual(['ApiVersions v3']);
    expect(v[0]).toEqual({ minVersion: 3, maxVersion: 13 });
    expect(finalizedFeatureLevel(v, 'transaction.version')).toBe(2);
  });

  it("falls back to kafkajs's own negotiation when a broker refuses v3, and knows no features then", async () => {
    const { broker, sent } = brokerAnswering((_name, version) => {
      if (version === 3) throw createErrorFromCode(35);
      return { apiVersions: [{ apiKey: 0, minVersion: 0, maxVersion: 8 }] };
    });
    const v = await broker.apiVersions();
    expect(sent).toEqual(['ApiVersions v3', 'ApiVersions v2']);
    expect(v[0]).toEqual({ minVersion: 0, maxVersion: 8 });
    expect(finalizedFeatureLevel(v, 'transaction.version')).toBe(0);
  });

  it('fetches offsets with v7 where offered, asking again while they are unstable', async () => {
    let unstable = 2;
    const { broker, sent } = brokerAnswering((name, version) => {
      if (name === 'OffsetFetch' && version === 7 && unstable-- > 0) throw createErrorFromCode(88);
      return { responses: [], errorCode: 0 };
    });
    const fetch = broker as unknown as { offsetFetch(args: object): Promise<unknown> };
    const args = { groupId: 'g', topics: [{ topic: 't', partitions: [{ partition: 0 }] }] };
    broker.versions = { 9: { minVersion: 1, maxVersion: 9 } };
    await expect(fetch.offsetFetch(args)).resolves.toMatchObject({ responses: [] });
    expect(sent).toEqual(['OffsetFetch v7', 'OffsetFetch v7', 'OffsetFetch v7']);

    sent.length = 0;
    broker.versions = { 9: { minVersion: 1, maxVersion: 6 } };
    Object.assign(broker, {
      lookupRequest: () => () => ({ request: { apiName: 'OffsetFetch', apiVersion: 4 } }),
    });
    await fetch.offsetFetch(args);
    expect(sent).toEqual(['OffsetFetch v4']);
  });

  it('sends Produce v12 only for a transactional id on v2, on a broker that offers it', async () => {
    const { broker, sent } = brokerAnswering(() => ({ topics: [] }));
    const produce = (transactionalId: string | null) =>
      broker.produce({ transactionalId, producerId: 1, producerEpoch: 0, topicData: [] });
    broker.versions = versions(2);
    Object.assign(broker, {
      lookupRequest: () => () => ({ request: { apiName: 'Produce', apiVersion: 7 } }),
    });
    await produce('tx-on-v2');
    await produce(null);
    keepTransactionProtocolV1('tx-on-v1');
    try {
      await produce('tx-on-v1');
    } finally {
      releaseTransactionProtocol('tx-on-v1');
    }
    broker.versions = versions(1);
    await produce('tx-on-v2');
    expect(sent).toEqual(['Produce v12', 'Produce v7', 'Produce v7', 'Produce v7']);
  });
});
