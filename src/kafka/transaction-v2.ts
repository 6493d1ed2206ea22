import { fixState } from './fixes/state.ts';
import { apiKeys, offers, type Versions } from './protocol/flexible-request.ts';

/**
 * Which transactions take Kafka's transaction protocol v2 (KIP-890 part 2, Kafka 4.0+), which the
 * fix `fixes/transaction-protocol-v2.ts` adds to kafkajs: those of a cluster that finalizes
 * `transaction.version` 2 on a broker that offers every v2 request, unless their transactional id
 * is kept on v1.
 */

const TRANSACTION_VERSION_FEATURE = 'transaction.version';

/** The level at which the cluster finalizes a feature, 0 when it does not or the broker says nothing. */
export function finalizedFeatureLevel(versions: Versions | null | undefined, feature: string): number {
  return (versions && fixState.finalizedFeatures.get(versions)?.get(feature)) ?? 0;
}

/** Keeps the cluster's finalized feature levels with the versions object its broker answered. */
export function withFinalizedFeatures(versions: Versions, features: ReadonlyMap<string, number>): Versions {
  fixState.finalizedFeatures.set(versions, features);
  return versions;
}

/**
 * Transactional ids kept on the v1 protocol whatever the cluster offers. On v2, when a producer's
 * next transaction follows its last at once, the broker's enrolment of the first partition meets
 * the last one's markers still being written (CONCURRENT_TRANSACTIONS) and the broker retries it
 * after `add.partitions.to.txn.retry.backoff.ms` (20 ms by default, a static broker setting), where
 * kafkajs's own retry on v1 waits 5 ms (producer.ts).
 */
const keptOnV1 = fixState.transactionV1Ids;
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
