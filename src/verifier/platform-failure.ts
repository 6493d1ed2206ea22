import { ErrorCodes, findError, KafkaError } from '../errors.ts';
import { causeChain } from '../kafka/errors.ts';
import { refusedTopicsOf } from '../kafka/index.ts';

/**
 * The broker's answers that only an operator's change ends: refused credentials (SASL), and the
 * authorization of what the verifier itself uses (its topics, its consumer group, its transactional
 * ids, the cluster). A custom reply topic's refusal never reaches here: its replies move to the
 * default topic (refused-topics.ts).
 */
const PLATFORM_REFUSALS = new Set([
  'SASL_AUTHENTICATION_FAILED',
  'ILLEGAL_SASL_STATE',
  'UNSUPPORTED_SASL_MECHANISM',
  'TOPIC_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
]);

function statusOf(err: { status?: unknown }): number | undefined {
  return typeof err.status === 'number' ? err.status : undefined;
}

/**
 * Whether a failure of the verifier's Kafka session is the platform's doing, which no restart ends:
 * fenced by a newer instance (exit 4), the upstream refusing the API key (exit 3), a configuration
 * error (the sandbox mark included), Kafka refusing fraudlink's TLS settings or credentials, credentials or authorizations refused by the broker or the registry, one of the verifier's
 * own topics (default replies, DLQ) refusing its records for good, or the verifier's own verdict
 * that a record cannot be written (a non-retriable KafkaError it raised itself, with no broker
 * answer behind it). Anything else (a broker or registry outage, a consumer kafkajs gave up on, a
 * transaction the broker could not finish) is ridden out by restarting the session.
 */
export function isPlatformFailure(err: unknown): boolean {
  if (
    findError(err, ErrorCodes.KAFKA_FENCED) ||
    findError(err, ErrorCodes.UPSTREAM_UNAUTHORIZED) ||
    findError(err, ErrorCodes.CONFIG_INVALID) ||
    findError(err, ErrorCodes.TOPIC_CONFIG_MISMATCH) ||
    findError(err, ErrorCodes.KAFKA_AUTHENTICATION) ||
    findError(err, ErrorCodes.KAFKA_TLS)
  ) {
    return true;
  }
  if (refusedTopicsOf(err).length > 0) return true;
  for (const e of causeChain(err)) {
    if (e.type && PLATFORM_REFUSALS.has(e.type)) return true;
    if (e.name === 'KafkaJSSASLAuthenticationError') return true;
    // The registry refusing the verifier's account.
    const status = statusOf(e as { status?: unknown });
    if (status === 401 || status === 403) return true;
  }
  return err instanceof KafkaError && !err.retriable && err.cause === undefined;
}
