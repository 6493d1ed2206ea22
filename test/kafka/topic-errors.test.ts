import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { refusedTopicsOf, toKafkaError } from '../../src/kafka/errors.ts';
import '../../src/kafka/kafkajs.ts';

const require = createRequire(import.meta.url);
// Importing kafkajs.ts installs the patch, as every kafkajs client of fraudlink gets it.
const Broker = require('@fraudlink/kafkajs/src/broker/index.js') as new (
  options: object,
) => {
  versions: object | null;
  produce(args: object): Promise<unknown>;
  addPartitionsToTxn(args: object): Promise<unknown>;
  metadata(topics: string[]): Promise<unknown>;
};
const { lookup } = require('@fraudlink/kafkajs/src/protocol/requests/index.js') as {
  lookup(versions: object): unknown;
};
const logger = { namespace: () => ({ debug() {}, info() {}, warn() {}, error() {} }) };

/** A broker whose connection answers every request with `data` decoded, parsed as kafkajs's connection does. */
function brokerAnswering(data: unknown) {
  const connectionPool = {
    connectionTimeout: 1000,
    async send({ response }: { response: { parse(d: unknown): Promise<unknown> } }) {
      return response.parse(data);
    },
  };
  const broker = new Broker({ connectionPool, logger });
  // Produce v7, Metadata v6 and AddPartitionsToTxn v1: kafkajs's own versions, as on transaction
  // protocol v1.
  broker.versions = {
    0: { minVersion: 3, maxVersion: 7 },
    3: { minVersion: 0, maxVersion: 6 },
    24: { minVersion: 0, maxVersion: 1 },
  };
  return Object.assign(broker, { lookupRequest: lookup(broker.versions) });
}

const failure = (call: Promise<unknown>) =>
  call.then(
    () => new Error('expected a failure'),
    (err: unknown) => err,
  );

describe('produce and metadata errors naming their topic partitions', () => {
  it('names the topic a transaction may not write to, though kafkajs throws another partition OPERATION_NOT_ATTEMPTED first', async () => {
    const broker = brokerAnswering({
      throttleTime: 0,
      errors: [
        { topic: 'replies', partitionErrors: [{ partition: 0, errorCode: 55 }] },
        { topic: 'replies.team-a', partitionErrors: [{ partition: 2, errorCode: 29 }] },
      ],
    });
    const err = await failure(
      broker.addPartitionsToTxn({ transactionalId: 't', producerId: 1, producerEpoch: 0, topics: [] }),
    );
    expect(err).toMatchObject({
      type: 'OPERATION_NOT_ATTEMPTED',
      topicErrors: [
        { topic: 'replies', partition: 0, type: 'OPERATION_NOT_ATTEMPTED' },
        { topic: 'replies.team-a', partition: 2, type: 'TOPIC_AUTHORIZATION_FAILED' },
      ],
    });
    expect(refusedTopicsOf(toKafkaError(err, 'send in transaction failed'))).toEqual(['replies.team-a']);
  });

  it('names each topic whose partitions refused a Produce, and no topic for an error any topic may get', async () => {
    const produced = (partitions: { topic: string; errorCode: number }[]) =>
      failure(
        brokerAnswering({
          topics: partitions.map(({ topic, errorCode }) => ({
            topicName: topic,
            partitions: [{ partition: 0, errorCode, baseOffset: '-1', logAppendTime: '-1' }],
          })),
          throttleTime: 0,
        }).produce({ topicData: [] }),
      );
    const tooLarge = await produced([
      { topic: 'replies', errorCode: 0 },
      { topic: 'replies.small', errorCode: 10 },
    ]);
    expect(tooLarge).toMatchObject({ type: 'MESSAGE_TOO_LARGE' });
    expect(refusedTopicsOf(tooLarge)).toEqual(['replies.small']);
    // NOT_ENOUGH_REPLICAS: the cluster's trouble, not the topic's refusal.
    expect(refusedTopicsOf(await produced([{ topic: 'replies', errorCode: 19 }]))).toEqual([]);
    // Any error Kafka does not call retriable refuses for good; a deleted topic too. Not fencing.
    const anyReason = await produced([
      { topic: 'replies.invalid', errorCode: 17 },
      { topic: 'replies.policy', errorCode: 44 },
      { topic: 'replies.acks', errorCode: 21 },
      { topic: 'replies.deleted', errorCode: 3 },
      { topic: 'replies.fenced', errorCode: 47 },
      { topic: 'replies.sequence', errorCode: 45 },
    ]);
    expect(refusedTopicsOf(anyReason)).toEqual([
      'replies.invalid',
      'replies.policy',
      'replies.acks',
      'replies.deleted',
    ]);
  });

  it('names the topic whose metadata the broker refuses (no Describe ACL), as a send or a partition count asks it first', async () => {
    const looked = (topics: { topic: string; topicErrorCode: number }[]) =>
      failure(
        brokerAnswering({
          throttleTime: 0,
          brokers: [],
          clusterId: 'c',
          controllerId: 1,
          topicMetadata: topics.map((t) => ({ ...t, isInternal: false, partitionMetadata: [] })),
        }).metadata(topics.map((t) => t.topic)),
      );
    const refused = await looked([
      { topic: 'replies', topicErrorCode: 0 },
      { topic: 'replies.team-a', topicErrorCode: 29 },
    ]);
    expect(refused).toMatchObject({
      type: 'TOPIC_AUTHORIZATION_FAILED',
      topicErrors: [{ topic: 'replies.team-a', partition: -1, type: 'TOPIC_AUTHORIZATION_FAILED' }],
    });
    expect(refusedTopicsOf(toKafkaError(refused, 'fetch metadata of replies.team-a'))).toEqual([
      'replies.team-a',
    ]);
    // LEADER_NOT_AVAILABLE: a topic being created, not refused.
    expect(refusedTopicsOf(await looked([{ topic: 'replies', topicErrorCode: 5 }]))).toEqual([]);
  });
});
