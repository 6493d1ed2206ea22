import { AsyncLocalStorage } from 'node:async_hooks';
import type { DecompressionBudget } from '../fetch-budget.ts';
import type { GroupMembership } from '../types.ts';
import type { AbortFilter } from './aborted-transactions-filter.ts';
import type { GroupJoinHooks, KafkajsConsumerGroup } from './group-join-hooks.ts';
import type {
  EncoderInstance,
  PartitionerFactory,
  RecordDecoder,
  RecordEncoder,
  RequestFramer,
} from './kafkajs-internals.ts';
import type { Grouper } from './linear-partition-grouping.ts';
import type { PartitionBytesLimit } from './oversized-partition-batch.ts';

/** The name each fix installs under (its file's name). */
export type FixName =
  | 'aborted-transactions-filter'
  | 'pooled-encoder-buffers'
  | 'int-varlongs'
  | 'linear-partition-grouping'
  | 'varints-in-place'
  | 'long-free-partitioner'
  | 'record-headers-in-place'
  | 'one-copy-requests'
  | 'numeric-record-decoding'
  | 'request-queue-without-timer-loop'
  | 'transaction-protocol-v2'
  | 'kafka-error-codes'
  | 'group-join-hooks'
  | 'stable-offset-fetch'
  | 'oversized-partition-batch'
  | 'compression-codecs'
  | 'topic-partition-errors'
  | 'unreadable-record-batches'
  | 'tls-refusals-not-retriable';

/** kafkajs's own implementations that a fix replaced, kept for the tests that compare with them. */
export interface KafkajsOriginals {
  ensureAvailable?: (this: EncoderInstance, length: number) => void;
  writeEncoderArray?: (this: EncoderInstance, value: EncoderInstance[]) => EncoderInstance;
  sizeOfVarLong?: (value: unknown) => number;
  writeVarLong?: (this: EncoderInstance, value: unknown) => EncoderInstance;
  writeUVarInt?: (this: EncoderInstance, value: unknown) => EncoderInstance;
  groupMessagesPerPartition?: Grouper;
  filterAbortedMessages?: AbortFilter;
  murmur2?: (key: unknown) => number;
  createPartitioner?: PartitionerFactory;
  record?: RecordEncoder;
  writeArray?: (this: EncoderInstance, array: unknown[], type?: string, length?: number) => EncoderInstance;
  frameRequest?: RequestFramer;
  decodeRecord?: RecordDecoder;
  scheduleCheckPendingRequests?: () => void;
  joinAndSync?: (this: KafkajsConsumerGroup) => Promise<void>;
  seekOffsets?: (this: KafkajsConsumerGroup, topicPartitions: unknown) => Promise<void>;
}

/**
 * Everything the fixes keep for the life of the process. The fixes patch kafkajs's modules, which
 * the CommonJS cache holds once per process, while a test runner may evaluate this layer's ES
 * modules more than once: so the state is one object per process too, and a second evaluation
 * finds the fixes installed and shares their stores.
 */
export interface KafkajsFixState {
  /** The fixes in place: installing one again does nothing. */
  readonly installed: Set<FixName>;
  readonly originals: KafkajsOriginals;
  /**
   * The message lists (a send's `topicMessages[].messages`, as kafkajs hands them to the grouper)
   * of the sends that fix 15 may refuse: fraudlink's own, whose sender cuts a refused send.
   */
  readonly cuttableMessages: WeakSet<object>;
  /** Fix 15's check, which the grouper (fix 4) consults; absent, sends are grouped unchecked. */
  partitionBytesLimit?: PartitionBytesLimit | undefined;
  /** The decompression budget of the fetch response being decoded (fix 16). */
  readonly fetchBudgets: AsyncLocalStorage<DecompressionBudget>;
  /**
   * The consumer group member whose offsets a transaction commits, by the `topics` list handed to
   * kafkajs's `sendOffsets` (fix 11: the TxnOffsetCommit carries its generation and id).
   */
  readonly offsetsMemberships: WeakMap<object, GroupMembership>;
  /** Transactional ids kept on transaction protocol v1 whatever the cluster offers (fix 11). */
  readonly transactionV1Ids: Set<string>;
  /** The cluster's finalized feature levels, by the kafkajs versions object they came with (fix 11). */
  readonly finalizedFeatures: WeakMap<object, ReadonlyMap<string, number>>;
  /** The hooks of a consumer, by the partition assigner kafkajs hands its ConsumerGroup (fix 13). */
  readonly groupHooks: WeakMap<object, GroupJoinHooks>;
}

const SLOT = Symbol.for('fraudlink.kafkajs');

function createFixState(): KafkajsFixState {
  return {
    installed: new Set(),
    originals: {},
    cuttableMessages: new WeakSet(),
    fetchBudgets: new AsyncLocalStorage(),
    offsetsMemberships: new WeakMap(),
    transactionV1Ids: new Set(),
    finalizedFeatures: new WeakMap(),
    groupHooks: new WeakMap(),
  };
}

const slot = globalThis as { [SLOT]?: KafkajsFixState };
slot[SLOT] ??= createFixState();

/** The process's one state of the kafkajs fixes. */
export const fixState: KafkajsFixState = slot[SLOT];

/**
 * Runs `install` once per process under `name`: the fixes' common guard. A fix whose modules are
 * already patched (a second evaluation of this layer) is left as it is.
 */
export function installOnce(state: KafkajsFixState, name: FixName, install: () => void): void {
  if (state.installed.has(name)) return;
  install();
  state.installed.add(name);
}
