import { AbortedError, FencedError, KafkaError } from '../errors.ts';
import { securityErrorOf } from './security-errors.ts';
import type { TopicPartitionError } from './topic-errors.ts';

/**
 * The fencing errors, by the broker's error types. Brokers answer kafkajs's old request versions
 * with INVALID_PRODUCER_EPOCH (47), newer versions (transaction protocol v2) with PRODUCER_FENCED
 * (90, known to kafkajs through fixes/kafka-error-codes.ts). INVALID_PRODUCER_ID_MAPPING (49): the
 * coordinator no longer knows this producer's id, e.g. after a newer instance took the
 * transactional id over, or after it expired idle; `transaction()` (producer.ts) takes a new
 * producer id once for the latter before reporting it.
 */
const FENCING_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'INVALID_PRODUCER_ID_MAPPING']);
const FENCING_CODES = new Set([47, 49, 90]);

interface KafkajsLike {
  name?: string;
  type?: string;
  code?: number;
  retriable?: boolean;
  message?: string;
  cause?: unknown;
  originalError?: unknown;
}

/** `err` and its causes (kafkajs's `originalError` first), each once. */
export function* causeChain(err: unknown): Generator<KafkajsLike> {
  const seen = new Set<unknown>();
  let current: unknown = err;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    yield current as KafkajsLike;
    const e = current as KafkajsLike;
    current = e.originalError ?? e.cause;
  }
}

/** Whether kafkajs reported the broker's error `type` (e.g. MESSAGE_TOO_LARGE) anywhere in the chain. */
export function hasErrorType(err: unknown, type: string): boolean {
  for (const e of causeChain(err)) if (e.type === type) return true;
  return false;
}

/** Whether an error of this `name` is anywhere in the chain (kafkajs wraps errors in its own). */
export function hasErrorName(err: unknown, name: string): boolean {
  for (const e of causeChain(err)) if (e.name === name) return true;
  return false;
}

/**
 * The group coordinator's refusals of a member's offsets once the member is out of the group's
 * current generation: ILLEGAL_GENERATION (22), UNKNOWN_MEMBER_ID (25), FENCED_INSTANCE_ID (82).
 * Kafka's Java producer reports each as a CommitFailedException, an abortable error.
 */
const STALE_MEMBER_TYPES = new Set(['ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID']);

export function isStaleMember(err: unknown): boolean {
  for (const e of causeChain(err)) if (e.type && STALE_MEMBER_TYPES.has(e.type)) return true;
  return false;
}

export function isFencing(err: unknown): boolean {
  for (const e of causeChain(err)) {
    if (e.type && FENCING_TYPES.has(e.type)) return true;
    if (e.code !== undefined && FENCING_CODES.has(e.code)) return true;
  }
  return false;
}

/**
 * Errors a Produce, AddPartitionsToTxn or Metadata answer may name a topic partition with that are
 * the producer's or the transaction's state, not the topic's: fencing, sequence numbers, the
 * transactional id's ACL, a partition not attempted because another failed.
 */
const NOT_THE_TOPICS = new Set([
  ...FENCING_TYPES,
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'DUPLICATE_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_TXN_STATE',
  'CONCURRENT_TRANSACTIONS',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'OPERATION_NOT_ATTEMPTED',
  'UNSUPPORTED_VERSION',
]);

/**
 * Whether a topic's answer refuses its records for good: any error Kafka does not call retriable
 * (an ACL, `max.message.bytes`, an invalid name, a create-topic policy, record validation, ...),
 * and UNKNOWN_TOPIC_OR_PARTITION, which outlasting the client's retries means a topic deleted; not
 * the producer's own state (NOT_THE_TOPICS). A retriable error (a leader moving, too few replicas
 * in sync) is the cluster's trouble, not the topic's refusal.
 */
function refusesForGood(error: TopicPartitionError): boolean {
  if (NOT_THE_TOPICS.has(error.type)) return false;
  return !error.retriable || error.type === 'UNKNOWN_TOPIC_OR_PARTITION';
}

/** Each topic that refused `err`'s records for good (refusesForGood), with the refusals it answered. */
function topicRefusals(err: unknown): Map<string, Set<string>> {
  const refusals = new Map<string, Set<string>>();
  for (const e of causeChain(err)) {
    const { topicErrors } = e as { topicErrors?: TopicPartitionError[] };
    for (const t of topicErrors ?? []) {
      if (!refusesForGood(t)) continue;
      const types = refusals.get(t.topic) ?? new Set<string>();
      types.add(t.type);
      refusals.set(t.topic, types);
    }
  }
  return refusals;
}

/**
 * The topics that refused a failed send or transaction's records for good (see refusesForGood), as
 * the broker named them (topic-errors.ts); empty when the failure is not such a refusal. The
 * caller decides whose topic it is: a refusal by one of fraudlink's own topics stops it.
 */
export function refusedTopicsOf(err: unknown): string[] {
  return [...topicRefusals(err).keys()];
}

/**
 * Every topic a failed send or transaction's error names for its own partitions, retriable or not
 * (a leader moving, too few replicas in sync, the refusals of refusesForGood), but not for the
 * producer's own state. A retriable error that outlasted the producer's retries on some topics
 * while the others took their records is those topics' trouble.
 */
export function troubledTopicsOf(err: unknown): string[] {
  const topics = new Set<string>();
  for (const e of causeChain(err)) {
    const { topicErrors } = e as { topicErrors?: TopicPartitionError[] };
    for (const t of topicErrors ?? []) if (!NOT_THE_TOPICS.has(t.type)) topics.add(t.topic);
  }
  return [...topics];
}

const OVERSIZE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

/**
 * Of refusedTopicsOf, the topics that refused only a record batch's size: larger than their
 * `max.message.bytes` (MESSAGE_TOO_LARGE) or segment (RECORD_LIST_TOO_LARGE). A batch of several
 * records may be refused where each record alone would not (SendOptions.unbatchedTopics).
 */
export function oversizeTopicsOf(err: unknown): string[] {
  return [...topicRefusals(err)]
    .filter(([, types]) => [...types].every((t) => OVERSIZE.has(t)))
    .map(([topic]) => topic);
}

/**
 * kafkajs errors into the project's model: Kafka's refusal of fraudlink's TLS settings or
 * credentials is KafkaTlsError or KafkaAuthenticationError, fencing is FencedError, the rest
 * KafkaError keeping kafkajs's verdict. An abort (AbortedError) stays one.
 */
export function toKafkaError(err: unknown, what: string): Error {
  if (err instanceof KafkaError || err instanceof FencedError || err instanceof AbortedError) return err;
  const refused = securityErrorOf(err, what);
  if (refused) return refused;
  if (isFencing(err)) {
    // The broker answers the same for a transaction it aborted after transaction.timeout.ms: the
    // producer's epoch is stale either way and only a new producer can go on.
    return new FencedError(
      `${what}: fenced (another producer with the same transactional id took over, or the broker expired a transaction open longer than its timeout)`,
      { cause: err },
    );
  }
  let retriable = false;
  for (const e of causeChain(err)) {
    if (
      e.retriable === true ||
      e.name === 'KafkaJSConnectionError' ||
      e.name === 'KafkaJSRequestTimeoutError'
    ) {
      retriable = true;
      break;
    }
    if (e.name === 'KafkaJSNumberOfRetriesExceeded') retriable = true;
  }
  const message = err instanceof Error ? err.message : String(err);
  return new KafkaError(`${what}: ${message}`, { retriable, cause: err });
}
