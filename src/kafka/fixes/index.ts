import * as abortedTransactionsFilter from './aborted-transactions-filter.ts';
import * as compressionCodecs from './compression-codecs.ts';
import * as groupJoinHooks from './group-join-hooks.ts';
import * as intVarlongs from './int-varlongs.ts';
import * as kafkaErrorCodes from './kafka-error-codes.ts';
import * as linearPartitionGrouping from './linear-partition-grouping.ts';
import * as longFreePartitioner from './long-free-partitioner.ts';
import * as numericRecordDecoding from './numeric-record-decoding.ts';
import * as oneCopyRequests from './one-copy-requests.ts';
import * as oversizedPartitionBatch from './oversized-partition-batch.ts';
import * as pooledEncoderBuffers from './pooled-encoder-buffers.ts';
import * as recordHeadersInPlace from './record-headers-in-place.ts';
import * as requestQueueWithoutTimerLoop from './request-queue-without-timer-loop.ts';
import * as stableOffsetFetch from './stable-offset-fetch.ts';
import { fixState, type KafkajsFixState } from './state.ts';
import * as tlsRefusalsNotRetriable from './tls-refusals-not-retriable.ts';
import * as topicPartitionErrors from './topic-partition-errors.ts';
import * as transactionProtocolV2 from './transaction-protocol-v2.ts';
import * as unreadableRecordBatches from './unreadable-record-batches.ts';
import * as varintsInPlace from './varints-in-place.ts';

/**
 * fraudlink's fixes to kafkajs 2.2.4 (no release since 2023), one file each, numbered as in
 * MANIFEST.md, which names for each the kafkajs defect and the test that fails without it.
 *
 * They swap modules in the CommonJS cache and patch prototypes, so they must be in place before
 * kafkajs's own modules load (`installFixes` runs before kafkajs.ts requires kafkajs). A swapped
 * module's class is unchanged, so `instanceof` and static helpers keep working.
 */

interface Fix {
  install(state: KafkajsFixState): void;
}

/** In installation order: each fix's modules before the kafkajs modules that require them load. */
const FIXES: readonly Fix[] = [
  tlsRefusalsNotRetriable, // 19: first, it swaps a class kafkajs's network modules take when they load
  abortedTransactionsFilter, // 1
  pooledEncoderBuffers, // 2: before 3, 5, 7 and 8, which patch the Encoder it swaps in
  intVarlongs, // 3
  varintsInPlace, // 5
  linearPartitionGrouping, // 4
  oversizedPartitionBatch, // 15: checked by 4's grouper
  longFreePartitioner, // 6
  recordHeadersInPlace, // 7
  oneCopyRequests, // 8
  numericRecordDecoding, // 9
  unreadableRecordBatches, // 18: after 9 (kafkajs's batch decoder takes the record decoder at its load)
  requestQueueWithoutTimerLoop, // 10
  transactionProtocolV2, // 11
  kafkaErrorCodes, // 12
  groupJoinHooks, // 13
  stableOffsetFetch, // 14
  topicPartitionErrors, // 17
  compressionCodecs, // 16
];

/** Installs every fix once per process; a second call (a second evaluation of this layer) does nothing. */
export function installFixes(state: KafkajsFixState = fixState): void {
  for (const fix of FIXES) fix.install(state);
}
