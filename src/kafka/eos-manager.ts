import assert from 'node:assert';
import { createRequire } from 'node:module';
import { forgetCoordinators } from './coordinator-cache.ts';
import { fixState } from './fixes/state.ts';
import { kafkajsPath } from './kafkajs-path.ts';
import type { EndTxnV5Result } from './protocol/end-txn-v5.ts';
import type { Versions } from './protocol/flexible-request.ts';
import { memberTxnOffsetCommitVersion, type txnOffsetCommitFlexible } from './protocol/txn-offset-commit.ts';
import { transactionV2For } from './transaction-v2.ts';

/**
 * kafkajs's eosManager (producer/eosManager/index.js, kafkajs 2.2.4) with Kafka's transaction
 * protocol v2 beside its v1 (fixes/transaction-protocol-v2.ts). The v1 flow is kafkajs's, step for step. A
 * transaction takes v2 when, at its first request, the cluster finalizes `transaction.version` 2
 * and the transaction coordinator offers the v2 requests, unless its transactional id is kept on v1
 * (`keepTransactionProtocolV1`); it keeps that protocol to its end. On v2:
 * - no AddPartitionsToTxn: Produce v12 enrols its partitions (the partitions are still tracked,
 *   so that a transaction that wrote nothing sends no EndTxn, as on v1);
 * - no AddOffsetsToTxn: TxnOffsetCommit v5 enrols the offsets;
 * - EndTxn v5 returns the producer id and epoch for the next transaction (the epoch one higher,
 *   or a new id once the epoch is exhausted), and sequences start again at 0 under them.
 *
 * On either protocol, offsets given with their consumer group member (`offsetsMemberships`) carry
 * its generation and id (TxnOffsetCommit v5 on v2, v4 or v3 on v1), so that the group coordinator
 * refuses those of a member that is no longer in the group's current generation (KIP-447).
 *
 * Beyond kafkajs, on either protocol, EndTxn and (v1) AddOffsetsToTxn are retried as Kafka's Java
 * client retries them (kafkajs sent them once): after a coordinator that moved or was not ready, a
 * transaction still completing, or a lost connection or response. The coordinator recognises a
 * repeated EndTxn (v1: the same epoch, the transaction already completed with that result; v2: the
 * epoch before its bump) and answers it as it answered the first, so a commit whose response was
 * lost still commits once; a repeated AddOffsetsToTxn adds what is added already. And
 * TxnOffsetCommit is retried as the Java client retries it, after a coordinator that moved or was
 * loading (see the codes below; kafkajs's retry never ran), REQUEST_TIMED_OUT, any other retriable
 * answer (on v2, CONCURRENT_TRANSACTIONS while the previous transaction's markers are still being
 * written), and a lost connection or response: the same offsets, sent again.
 *
 * A producer whose v1 transaction ended with a partition's sequence moved back by kafkajs after a
 * failed Produce (the batch possibly written) refuses to begin another (`unresolvedSequences`).
 *
 * Installed in the CommonJS cache in place of kafkajs's module (fixes/transaction-protocol-v2.ts), so
 * kafkajs's producer creates it.
 */

const require = createRequire(import.meta.url);

export const eosManagerModulePath = kafkajsPath('producer/eosManager/index.js');

/**
 * The consumer group member whose offsets a transaction commits, by the `topics` list handed to
 * kafkajs's `sendOffsets` (which passes on only the group id and that list, as it is): the
 * TxnOffsetCommit then carries the member's generation and id (KIP-447). One per process
 * (fixes/state.ts), like the eosManager it feeds.
 */
export const offsetsMemberships = fixState.offsetsMemberships;

interface Logger {
  debug(message: string, extra?: object): void;
}
interface ProtocolError extends Error {
  type?: string;
  /** Kafka's error code, or a socket's (ECONNREFUSED...) on a connection error. */
  code?: number | string;
}
type Bail = (e: unknown) => void;
type Retrier = <T>(fn: (bail: Bail, retryCount: number, retryTime: number) => Promise<T>) => Promise<T>;
interface LockInstance {
  acquire(): Promise<void>;
  release(): void;
}
interface StateMachine {
  on(event: 'transition', listener: (e: { to: string; from: string }) => void): void;
  transitionTo(state: string): void;
  state(): string;
  createGuarded<T extends object>(
    object: T,
    guards: Record<string, { legalStates: string[]; async?: boolean }>,
  ): T;
}

interface TopicPartitions {
  topic: string;
  partitions: { partition: number }[];
}
interface OffsetTopic {
  topic: string;
  partitions: { partition: number; offset: string }[];
}

interface Broker {
  nodeId: number;
  versions: Versions | null;
  initProducerId(args: { transactionalId?: string; transactionTimeout: number }): Promise<{
    producerId: unknown;
    producerEpoch: number;
  }>;
  addPartitionsToTxn(args: object): Promise<unknown>;
  addOffsetsToTxn(args: object): Promise<unknown>;
  txnOffsetCommit(args: object): Promise<unknown>;
  endTxn(args: object): Promise<unknown>;
  endTxnV5(args: {
    transactionalId: string;
    producerId: unknown;
    producerEpoch: number;
    transactionResult: boolean;
  }): Promise<EndTxnV5Result>;
  txnOffsetCommitFlexible(args: Parameters<typeof txnOffsetCommitFlexible>[0]): Promise<unknown>;
}
interface Cluster {
  retry?: object;
  refreshMetadataIfNecessary(): Promise<void>;
  findGroupCoordinator(args: { groupId: string; coordinatorType: number }): Promise<Broker>;
  findControllerBroker(): Promise<Broker>;
}

const createRetry = require(kafkajsPath('retry/index.js')) as (options?: object) => Retrier;
const Lock = require(kafkajsPath('utils/lock.js')) as new (options: { timeout: number }) => LockInstance;
const { KafkaJSNonRetriableError, KafkaJSConnectionError, KafkaJSRequestTimeoutError, KafkaJSProtocolError } =
  require(kafkajsPath('errors.js')) as {
    KafkaJSNonRetriableError: new (message: string) => Error;
    KafkaJSProtocolError: new (message: string) => Error & { retriable: boolean };
    KafkaJSConnectionError: new (message: string) => Error;
    KafkaJSRequestTimeoutError: new (message: string) => Error;
  };
const COORDINATOR_TYPES = require(kafkajsPath('protocol/coordinatorTypes.js')) as {
  GROUP: number;
  TRANSACTION: number;
};
const createStateMachine = require(kafkajsPath('producer/eosManager/transactionStateMachine.js')) as (args: {
  logger: Logger;
}) => StateMachine;
const { INT_32_MAX_VALUE } = require(kafkajsPath('constants.js')) as { INT_32_MAX_VALUE: number };
const STATES = require(kafkajsPath('producer/eosManager/transactionStates.js')) as Record<
  'UNINITIALIZED' | 'READY' | 'TRANSACTING' | 'COMMITTING' | 'ABORTING',
  string
>;

const NO_PRODUCER_ID = -1;
const SEQUENCE_START = 0;
const INIT_PRODUCER_RETRIABLE_PROTOCOL_ERRORS = [
  'NOT_COORDINATOR_FOR_GROUP',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'GROUP_LOAD_IN_PROGRESS',
  // The producer might have crashed and never committed the transaction: retry so that Kafka can
  // abort it (as Kafka's Java client does).
  'CONCURRENT_TRANSACTIONS',
];
// By Kafka's codes: kafkajs names 14–16 by their old GROUP_ names, so the lists of kafkajs's
// eosManager (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR) never matched
// and a TxnOffsetCommit to a coordinator that moved or was loading failed without its retry.
const REQUEST_TIMED_OUT = 7;
const COORDINATOR_LOAD_IN_PROGRESS = 14;
const COORDINATOR_NOT_AVAILABLE = 15;
const NOT_COORDINATOR = 16;
const CONCURRENT_TRANSACTIONS = 51;
const STALE_COORDINATOR_CODES = [COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR];
/**
 * TxnOffsetCommit answers after which the group coordinator is looked up again, as the Java
 * client's TxnOffsetCommitHandler does: REQUEST_TIMED_OUT too (a group coordinator before Kafka 4.0
 * answers it when the offsets' append times out; Kafka 4's answers COORDINATOR_NOT_AVAILABLE).
 * Any other retriable answer is retried with the same coordinator, as there: on v2 the coordinator
 * answers CONCURRENT_TRANSACTIONS while the transaction coordinator still writes the markers of
 * this producer's previous transaction (TxnOffsetCommit v5 enrols the offsets itself; KAFKA-16122),
 * and UNKNOWN_TOPIC_OR_PARTITION, COORDINATOR_LOAD_IN_PROGRESS or NOT_ENOUGH_REPLICAS_AFTER_APPEND
 * for a while. kafkajs's retriability of Kafka's codes is the Java client's (error-codes.ts adds
 * the codes kafkajs lacks, with Kafka's).
 */
const COMMIT_STALE_COORDINATOR_CODES = [...STALE_COORDINATOR_CODES, REQUEST_TIMED_OUT];
/**
 * Answers of the transaction coordinator to EndTxn and AddOffsetsToTxn that the Java client retries
 * without a new lookup (its EndTxnHandler and AddOffsetsToTxnHandler).
 */
const COORDINATOR_RETRIABLE_CODES = [COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS];
/** A request whose response may be lost: a broken or closed connection (its subclass), a timeout. */
const lostRequest = (e: unknown) =>
  e instanceof KafkaJSConnectionError || e instanceof KafkaJSRequestTimeoutError;

export interface EosManagerOptions {
  logger: Logger;
  cluster: Cluster;
  transactionTimeout?: number;
  transactional?: boolean;
  transactionalId?: string;
}

export function createEosManager({
  logger,
  cluster,
  transactionTimeout = 60000,
  transactional = false,
  transactionalId,
}: EosManagerOptions) {
  if (transactional && !transactionalId) {
    throw new KafkaJSNonRetriableError('Cannot manage transactions without a transactionalId');
  }
  const retrier = createRetry(cluster.retry);

  let producerId: unknown = NO_PRODUCER_ID;
  let producerEpoch = 0;
  /** Idempotent production: the next sequence per topic and partition. */
  let producerSequence: Record<string, Record<number, number>> = {};
  /** Idempotent production serializes requests per broker (sequence handling). */
  let brokerMutexLocks: Record<number, LockInstance> = {};
  /** Partitions already in the transaction. */
  let transactionTopicPartitions: Record<string, Record<number, boolean>> = {};
  let hasOffsetsAddedToTransaction = false;
  /** Whether the current transaction takes the v2 protocol (decided at its first request). */
  let transactionV2 = false;
  /**
   * Partitions ("topic:partition") whose last Produce failed: kafkajs rolled their sequence back,
   * though the broker may have written the batch (a lost response). A successful retry sends the
   * same sequence again and resolves the partition. One left unresolved when a v1 transaction ends
   * stays under the same epoch (EndTxn v5 bumps it, InitProducerId gives a new one), and a later
   * batch from that sequence would be taken by the broker for the written one, acknowledged and
   * dropped as a duplicate: the producer then starts no more transactions (beginTransaction).
   */
  let unresolvedSequences = new Set<string>();

  const stateMachine = createStateMachine({ logger });
  stateMachine.on('transition', ({ to }) => {
    if (to === STATES.READY) {
      transactionTopicPartitions = {};
      hasOffsetsAddedToTransaction = false;
    }
  });

  const findTransactionCoordinator = () =>
    cluster.findGroupCoordinator({
      groupId: transactionalId as string,
      coordinatorType: COORDINATOR_TYPES.TRANSACTION,
    });

  const transactionalGuard = () => {
    if (!transactional) throw new KafkaJSNonRetriableError('Method unavailable if non-transactional');
  };

  /** A transaction is ongoing once offsets or partitions were added to it. */
  const isOngoing = () =>
    hasOffsetsAddedToTransaction ||
    Object.values(transactionTopicPartitions).some((partitions) => Object.values(partitions).some(Boolean));

  /** Takes the current transaction's protocol at its first request; later requests keep it. */
  const takeProtocol = (coordinator: Broker) => {
    if (!isOngoing()) transactionV2 = transactionV2For(transactionalId as string, coordinator.versions);
  };

  /**
   * A request to the transaction coordinator, retried as the Java client retries it, within the
   * client's retry budget (`cluster.retry`, client.ts). The coordinator answers a repeated EndTxn or
   * AddOffsetsToTxn as it answered the first, so a request whose response was lost is sent again.
   */
  function toTransactionCoordinator<T>(what: string, send: (coordinator: Broker) => Promise<T>): Promise<T> {
    return retrier(async (bail, retryCount, retryTime) => {
      try {
        return await send(await findTransactionCoordinator());
      } catch (e) {
        const { code, message } = e as ProtocolError;
        const stale = STALE_COORDINATOR_CODES.includes(code as number) || lostRequest(e);
        if (stale || COORDINATOR_RETRIABLE_CODES.includes(code as number)) {
          // A coordinator that moved, or a connection that broke, is looked up again.
          if (stale) forgetCoordinators();
          logger.debug(`${what} not completed, retrying`, {
            error: message,
            transactionalId,
            retryCount,
            retryTime,
          });
          throw e;
        }
        bail(e);
        // Already rejected by bail, which also ends the retries: this only ends the attempt.
        throw e;
      }
    });
  }

  /** EndTxn to the transaction coordinator, retried (see above). */
  async function endTransaction(committed: boolean) {
    const args = { transactionalId: transactionalId as string, producerId, producerEpoch };
    const result = await toTransactionCoordinator('EndTxn', (broker) =>
      transactionV2
        ? broker.endTxnV5({ ...args, transactionResult: committed })
        : broker.endTxn({ ...args, transactionResult: committed }),
    );
    if (!transactionV2) return;
    const { producerId: nextId, producerEpoch: nextEpoch } = result as EndTxnV5Result;
    producerId = nextId;
    producerEpoch = nextEpoch;
    producerSequence = {};
    unresolvedSequences = new Set();
    logger.debug('Producer epoch bumped by the end of the transaction', { producerId, producerEpoch });
  }

  async function finish(committed: boolean) {
    transactionalGuard();
    stateMachine.transitionTo(committed ? STATES.COMMITTING : STATES.ABORTING);
    if (isOngoing()) await endTransaction(committed);
    else logger.debug('No partitions or offsets registered, not sending EndTxn');
    stateMachine.transitionTo(STATES.READY);
  }

  const eosManager = stateMachine.createGuarded(
    {
      getProducerId: () => producerId,
      getProducerEpoch: () => producerEpoch,
      getTransactionalId: () => transactionalId,

      /** InitProducerId; overwrites any state of this manager. */
      async initProducerId() {
        return retrier(async (bail, retryCount, retryTime) => {
          try {
            await cluster.refreshMetadataIfNecessary();
            // A non-transactional producer may ask any broker.
            const broker = await (transactional
              ? findTransactionCoordinator()
              : cluster.findControllerBroker());
            const result = await broker.initProducerId({
              transactionalId: transactional ? transactionalId : undefined,
              transactionTimeout,
            });
            stateMachine.transitionTo(STATES.READY);
            producerId = result.producerId;
            producerEpoch = result.producerEpoch;
            producerSequence = {};
            unresolvedSequences = new Set();
            brokerMutexLocks = {};
            logger.debug('Initialized producer id & epoch', { producerId, producerEpoch });
          } catch (e) {
            const type = (e as ProtocolError).type;
            if (type && INIT_PRODUCER_RETRIABLE_PROTOCOL_ERRORS.includes(type)) {
              if (type === 'CONCURRENT_TRANSACTIONS') {
                logger.debug('There is an ongoing transaction on this transactionId, retrying', {
                  error: (e as Error).message,
                  stack: (e as Error).stack,
                  transactionalId,
                  retryCount,
                  retryTime,
                });
              }
              throw e;
            }
            bail(e);
          }
        });
      },

      /** The next sequence for a partition; 0 before initialization. */
      getSequence(topic: string, partition: number): number {
        if (!eosManager.isInitialized()) return SEQUENCE_START;
        producerSequence[topic] = producerSequence[topic] || {};
        const topicSequence = producerSequence[topic];
        topicSequence[partition] = topicSequence[partition] || SEQUENCE_START;
        return topicSequence[partition];
      },

      /**
       * Advances a partition's sequence (nothing before initialization: not idempotent) before a
       * Produce, or moves it back (a negative increment) after the Produce failed.
       */
      updateSequence(topic: string, partition: number, increment: number) {
        if (!eosManager.isInitialized()) return;
        const key = `${topic}:${partition}`;
        if (increment < 0) unresolvedSequences.add(key);
        else unresolvedSequences.delete(key);
        let sequence = eosManager.getSequence(topic, partition) + increment;
        // The sequence is an Int32 in the record batch.
        if (sequence >= INT_32_MAX_VALUE) {
          logger.debug(`Sequence for ${topic} ${partition} exceeds max value (${sequence}). Rotating to 0.`);
          sequence = 0;
        }
        (producerSequence[topic] as Record<number, number>)[partition] = sequence;
      },

      beginTransaction() {
        transactionalGuard();
        if (unresolvedSequences.size > 0) {
          throw new KafkaJSNonRetriableError(
            `transactional producer ${transactionalId} must be recreated: a Produce of its last ` +
              'transaction failed after the broker may have written it, and on transaction protocol ' +
              "v1 the next transaction's records would reuse its sequence numbers under the same " +
              'epoch, to be dropped by the broker as duplicates',
          );
        }
        stateMachine.transitionTo(STATES.TRANSACTING);
        transactionV2 = false;
      },

      /** Adds partitions not yet in the transaction; called before sending to them. */
      async addPartitionsToTransaction(topicData: TopicPartitions[]) {
        transactionalGuard();
        const newTopicPartitions: Record<string, number[]> = {};
        for (const { topic, partitions } of topicData) {
          transactionTopicPartitions[topic] = transactionTopicPartitions[topic] || {};
          for (const { partition } of partitions) {
            if (!transactionTopicPartitions[topic][partition]) {
              newTopicPartitions[topic] = newTopicPartitions[topic] || [];
              newTopicPartitions[topic].push(partition);
            }
          }
        }
        const topics = Object.entries(newTopicPartitions).map(([topic, partitions]) => ({
          topic,
          partitions,
        }));
        if (topics.length > 0) {
          const broker = await findTransactionCoordinator();
          takeProtocol(broker);
          // On v2 the Produce that follows enrols the partitions.
          if (!transactionV2) {
            await broker.addPartitionsToTxn({ transactionalId, producerId, producerEpoch, topics });
          }
        }
        for (const { topic, partitions } of topics) {
          for (const partition of partitions)
            (transactionTopicPartitions[topic] as Record<number, boolean>)[partition] = true;
        }
      },

      commit: () => finish(true),
      abort: () => finish(false),

      isInitialized: () => producerId !== NO_PRODUCER_ID,
      isTransactional: () => transactional,
      isInTransaction: () => stateMachine.state() === STATES.TRANSACTING,

      async acquireBrokerLock(broker: Broker) {
        if (eosManager.isInitialized()) {
          brokerMutexLocks[broker.nodeId] = brokerMutexLocks[broker.nodeId] || new Lock({ timeout: 0xffff });
          await (brokerMutexLocks[broker.nodeId] as LockInstance).acquire();
        }
      },

      releaseBrokerLock(broker: Broker) {
        if (eosManager.isInitialized()) (brokerMutexLocks[broker.nodeId] as LockInstance).release();
      },

      /** Commits the consumer group's offsets in the transaction: only if the transaction commits. */
      async sendOffsets({ consumerGroupId, topics }: { consumerGroupId: string; topics: OffsetTopic[] }) {
        assert(consumerGroupId, 'Missing consumerGroupId');
        assert(topics, 'Missing offset topics');
        const transactionCoordinator = await findTransactionCoordinator();
        takeProtocol(transactionCoordinator);
        // On v2 the TxnOffsetCommit below enrols the offsets.
        if (!transactionV2) {
          await toTransactionCoordinator('AddOffsetsToTxn', (broker) =>
            broker.addOffsetsToTxn({ transactionalId, producerId, producerEpoch, groupId: consumerGroupId }),
          );
        }
        // Set once the coordinator has enrolled the offsets, as Kafka's Java client sets its
        // `transactionStarted` (TransactionManager): a transaction that enrolled nothing ends without
        // an EndTxn, one whose enrolment's outcome is unknown too; the coordinator then aborts it
        // at the next InitProducerId (after a failed transaction the connector opens a new producer
        // and the verifier stops, unless its offsets were refused as a stale member's: that abort
        // has the replies' partitions enrolled), or after the transaction timeout.
        hasOffsetsAddedToTransaction = true;

        let groupCoordinator = await cluster.findGroupCoordinator({
          groupId: consumerGroupId,
          coordinatorType: COORDINATOR_TYPES.GROUP,
        });
        const membership = offsetsMemberships.get(topics);
        return retrier(async (bail, retryCount, retryTime) => {
          try {
            const args = {
              transactionalId: transactionalId as string,
              producerId,
              producerEpoch,
              groupId: consumerGroupId,
              topics,
            };
            // The member, where one is given, goes in v5 on v2, and in v4 or v3 on v1 where the
            // coordinator offers them (Kafka 2.5+); otherwise v1 takes kafkajs's own (v0).
            const version = transactionV2
              ? 5
              : membership && memberTxnOffsetCommitVersion(groupCoordinator.versions);
            await (version
              ? groupCoordinator.txnOffsetCommitFlexible({ ...args, version, membership })
              : groupCoordinator.txnOffsetCommit(args));
          } catch (e) {
            const { code, message, stack } = e as ProtocolError;
            // A lost response is sent again, to a coordinator looked up again (the Java client's
            // TxnOffsetCommitHandler does the same): the offsets it carries are the same, and the
            // coordinator keeps one pending offset per partition for the transaction.
            if (COMMIT_STALE_COORDINATOR_CODES.includes(code as number) || lostRequest(e)) {
              logger.debug('Invalid group coordinator, finding new group coordinator and retrying', {
                error: message,
                stack,
                transactionalId,
                retryCount,
                retryTime,
              });
              // Not the coordinator cached for the next second (coordinator-cache.ts).
              forgetCoordinators();
              groupCoordinator = await cluster.findGroupCoordinator({
                groupId: consumerGroupId,
                coordinatorType: COORDINATOR_TYPES.GROUP,
              });
              throw e;
            }
            if (e instanceof KafkaJSProtocolError && e.retriable) {
              logger.debug('Group coordinator not ready for the offsets yet, retrying', {
                error: message,
                stack,
                transactionalId,
                retryCount,
                retryTime,
              });
              throw e;
            }
            bail(e);
          }
        });
      },
    },
    {
      initProducerId: { legalStates: [STATES.UNINITIALIZED, STATES.READY] },
      beginTransaction: { legalStates: [STATES.READY], async: false },
      addPartitionsToTransaction: { legalStates: [STATES.TRANSACTING] },
      sendOffsets: { legalStates: [STATES.TRANSACTING] },
      commit: { legalStates: [STATES.TRANSACTING] },
      abort: { legalStates: [STATES.TRANSACTING] },
    },
  );
  return eosManager;
}
