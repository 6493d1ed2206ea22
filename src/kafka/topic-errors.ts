import { createRequire } from 'node:module';
import { kafkajsPath } from './kafkajs-path.ts';
import { sendRequestOf } from './transaction-v2.ts';

/**
 * 17. Errors that name their topic partitions. Produce and AddPartitionsToTxn answer per topic
 * partition, and kafkajs throws the first failing partition's error alone, naming neither: a
 * transaction refused by one topic of several (an ACL, a `max.message.bytes` smaller than a record)
 * could not tell its caller which. Each such response's error now carries every failing partition
 * as `topicErrors` (`TopicPartitionError`), on every version: kafkajs's own requests and Produce v12
 * (transaction-v2.ts) go through the same Broker method, wrapped here. The error, its type and its
 * retriability are kafkajs's as before. AddPartitionsToTxn answers the partitions it did not get to
 * OPERATION_NOT_ATTEMPTED, which kafkajs may throw first: the refusal is in `topicErrors`. Metadata
 * answers per topic too: a topic the client may not Describe is TOPIC_AUTHORIZATION_FAILED there,
 * before any Produce (a send looks its topics up first, and so does `partitionCount`).
 */

const require = createRequire(import.meta.url);

export interface TopicPartitionError {
  topic: string;
  /** -1 for a topic's own error in a Metadata answer. */
  partition: number;
  /** Kafka's error type, e.g. TOPIC_AUTHORIZATION_FAILED. */
  type: string;
  /** Whether Kafka calls the error retriable (a leader moving, too few replicas in sync). */
  retriable: boolean;
}

interface ErrorModule {
  failure(code: number): boolean;
  createErrorFromCode(code: number): { type?: string; retriable?: boolean };
}
interface ProtocolRequest {
  request: { apiKey: number };
  response: { parse(data: unknown): Promise<unknown> };
}
type Send = (this: unknown, request: ProtocolRequest) => Promise<unknown>;

/** Produce (0), Metadata (3) and AddPartitionsToTxn (24). */
const PER_PARTITION_APIS = new Set([0, 3, 24]);

/**
 * Produce responses list `topics[].partitions[]`, AddPartitionsToTxn `errors[].partitionErrors[]`,
 * Metadata `topicMetadata[]` with an error of each topic's own.
 */
interface PerPartitionResponse {
  topics?: { topicName: string | null; partitions: { partition: number; errorCode: number }[] }[];
  errors?: { topic: string; partitionErrors: { partition: number; errorCode: number }[] }[];
  topicMetadata?: { topic: string; topicErrorCode: number }[];
}

/** The failing partitions of a decoded Produce or AddPartitionsToTxn response, or topics of a Metadata one. */
export function topicErrorsOf(data: unknown, errors: ErrorModule): TopicPartitionError[] {
  const response = data as PerPartitionResponse;
  const entries = [
    ...(response.topics ?? []).map((t) => ({ topic: t.topicName ?? '', partitions: t.partitions })),
    ...(response.errors ?? []).map((t) => ({ topic: t.topic, partitions: t.partitionErrors })),
    ...(response.topicMetadata ?? []).map((t) => ({
      topic: t.topic,
      partitions: [{ partition: -1, errorCode: t.topicErrorCode }],
    })),
  ];
  return entries.flatMap(({ topic, partitions }) =>
    partitions
      .filter((p) => errors.failure(p.errorCode))
      .map((p) => {
        const error = errors.createErrorFromCode(p.errorCode);
        return {
          topic,
          partition: p.partition,
          type: error.type ?? `code ${p.errorCode}`,
          retriable: error.retriable === true,
        };
      }),
  );
}

const INSTALLED = Symbol.for('fraudlink.kafkajs.topicErrors');

export function installTopicErrors(): void {
  const shared = globalThis as Record<symbol, unknown>;
  if (shared[INSTALLED]) return;
  shared[INSTALLED] = true;
  const errors = require(kafkajsPath('protocol/error.js')) as ErrorModule;
  const Broker = require(kafkajsPath('broker/index.js')) as { prototype: Record<symbol, Send> };
  const symbol = sendRequestOf(Broker);
  const send = Broker.prototype[symbol] as Send;
  Broker.prototype[symbol] = function sendNamingTopics(this: unknown, protocolRequest: ProtocolRequest) {
    if (!PER_PARTITION_APIS.has(protocolRequest.request.apiKey)) return send.call(this, protocolRequest);
    const { response } = protocolRequest;
    return send.call(this, {
      ...protocolRequest,
      response: {
        ...response,
        async parse(data: unknown) {
          try {
            return await response.parse(data);
          } catch (err) {
            if (err !== null && typeof err === 'object') {
              Object.assign(err, { topicErrors: topicErrorsOf(data, errors) });
            }
            throw err;
          }
        },
      },
    });
  };
}
