import { topicErrorsOf } from '../topic-errors.ts';
import {
  brokerModulePath,
  type ErrorModule,
  errorModulePath,
  require,
  sendRequestOf,
} from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 17. Errors that name their topic partitions.
 *
 * Produce and AddPartitionsToTxn answer per topic partition, and kafkajs throws the first failing
 * partition's error alone, naming neither: a transaction refused by one topic of several (an ACL, a
 * `max.message.bytes` smaller than a record) cannot tell its caller which.
 *
 * Each such response's error carries every failing partition as `topicErrors`
 * (`TopicPartitionError`, topic-errors.ts), on every version: kafkajs's own requests and Produce
 * v12 (fix 11) go through the same Broker method, wrapped here. The error, its type and its
 * retriability are kafkajs's as before. AddPartitionsToTxn answers the partitions it did not get to
 * OPERATION_NOT_ATTEMPTED, which kafkajs may throw first: the refusal is in `topicErrors`. Metadata
 * answers per topic too: a topic the client may not Describe is TOPIC_AUTHORIZATION_FAILED there,
 * before any Produce (a send looks its topics up first, and so does `partitionCount`).
 * `refusedTopicsOf` (errors.ts) gives the topics that refused the records for good: any error Kafka
 * does not call retriable (TOPIC_AUTHORIZATION_FAILED, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
 * INVALID_RECORD, INVALID_TIMESTAMP, INVALID_TOPIC_EXCEPTION, POLICY_VIOLATION, ...) and
 * UNKNOWN_TOPIC_OR_PARTITION (a topic deleted), but not the producer's own state (fencing, sequence
 * numbers, the transactional id's ACL).
 *
 * Test: test/kafka/topic-errors.test.ts, "produce and metadata errors naming their topic partitions"
 * › "names each topic whose partitions refused a Produce, and no topic for an error any topic may get";
 * against the broker, test/kafka/transactions.int.test.ts › "names the one topic of a transaction
 * that refused its records for good, nothing committed" (v1 and v2) and "names the topic of a
 * transaction whose metadata the broker refuses (no Describe ACL), nothing committed".
 */

interface ProtocolRequest {
  request: { apiKey: number };
  response: { parse(data: unknown): Promise<unknown> };
}
type Send = (this: unknown, request: ProtocolRequest) => Promise<unknown>;

/** Produce (0), Metadata (3) and AddPartitionsToTxn (24). */
const PER_PARTITION_APIS = new Set([0, 3, 24]);

function installSendNamingTopics(): void {
  const errors = require(errorModulePath) as ErrorModule;
  const Broker = require(brokerModulePath) as { prototype: Record<symbol, Send> };
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

export function install(state: KafkajsFixState): void {
  installOnce(state, 'topic-partition-errors', installSendNamingTopics);
}
