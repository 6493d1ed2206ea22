import type * as Kafkajs from '@fraudlink/kafkajs';
import { kafkajsPath } from '../kafkajs-path.ts';
import { require } from './kafkajs-internals.ts';
import { fixState, installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 13. Hooks on a consumer's (re)join.
 *
 * kafkajs has no revocation callback, shows no generation, and re-resolves its start offsets at
 * every join without telling anyone. Its assigners are the one per-consumer object it hands its
 * ConsumerGroup, so they carry the consumer's hooks (`assignerWithGroupHooks`):
 * `ConsumerGroup.joinAndSync` first awaits the `beforeJoin` hook, as Kafka's Java consumer calls
 * `onPartitionsRevoked` before it rejoins, and hands itself to `onGroup`, whose generation and
 * member id a transaction then sends with the member's offsets (KIP-447, as the Java consumer's
 * `groupMetadata()`). At each fetch, once kafkajs has resolved the partitions' start offsets
 * (`seekOffsets`), it also hands `onOffsetsResolved` a reader of the offset each assigned partition
 * is fetched from: every join builds a new OffsetManager that resolves them again (the committed
 * offset, or with none the topic's first or latest), and a member that commits nothing keeps them
 * itself (`resumeOnRejoin`).
 *
 * Test: test/kafka/consumer.int.test.ts, "group consumer on a real broker" › "awaits beforeJoin before
 * each join: a rebalance waits for a member still finishing its work" (and its `resumeOnRejoin`
 * tests, which read the offsets `onOffsetsResolved` hands over).
 */

const consumerGroupModulePath = kafkajsPath('consumer/consumerGroup.js');
const roundRobinModulePath = kafkajsPath('consumer/assigners/roundRobinAssigner/index.js');

type AssignerFactory = (args: object) => object;

/**
 * What a kafkajs ConsumerGroup shows of its membership: set by each JoinGroup, `memberId` reset when
 * the coordinator no longer knows it.
 */
export interface KafkajsGroupState {
  readonly generationId: number | null;
  readonly memberId: string | null;
}

export interface GroupJoinHooks {
  /** Awaited before every join; should not reject. */
  beforeJoin?: (() => Promise<void>) | undefined;
  /** Handed the member's ConsumerGroup before every join (a restarted consumer has a new one). */
  onGroup?: ((group: KafkajsGroupState) => void) | undefined;
  /**
   * Called at every fetch once kafkajs has resolved its start offsets, with a reader of the offset
   * the member fetches a partition of its assignment from next (undefined while unresolved).
   */
  onOffsetsResolved?: ((offsetOf: FetchOffsetReader) => void) | undefined;
}

export type FetchOffsetReader = (topic: string, partition: number) => bigint | undefined;

/**
 * kafkajs's round-robin assigner (its default), carrying the member's hooks: its ConsumerGroup
 * hands itself to `onGroup` and awaits `beforeJoin` before every join, and calls
 * `onOffsetsResolved` at every fetch.
 */
export function assignerWithGroupHooks(hooks: GroupJoinHooks): Kafkajs.PartitionAssigner {
  const roundRobin = require(roundRobinModulePath) as AssignerFactory;
  const factory: AssignerFactory = (args) => {
    const assigner = roundRobin(args);
    fixState.groupHooks.set(assigner, hooks);
    return assigner;
  };
  return factory as unknown as Kafkajs.PartitionAssigner;
}

/** The parts of kafkajs's OffsetManager (one per join) that say where each partition is fetched from. */
interface KafkajsOffsetManager {
  /** Moved on past each batch handed over, and by seeks. */
  resolvedOffsets: Record<string, Record<number, string | undefined> | undefined>;
  /** The start offsets resolved at the first fetch after the join; '-1' or absent until then. */
  committedOffsets(): Record<string, Record<number, string | undefined> | undefined>;
}

export interface KafkajsConsumerGroup extends KafkajsGroupState {
  assigners?: object[];
  offsetManager: KafkajsOffsetManager | null;
  joinAndSync(): Promise<void>;
  seekOffsets(topicPartitions: unknown): Promise<void>;
}

/** What kafkajs's `OffsetManager.nextOffset` would fetch from, without its side effect; undefined if unresolved. */
function fetchOffsetReader(manager: KafkajsOffsetManager | null): FetchOffsetReader {
  return (topic, partition) => {
    const offset =
      manager?.resolvedOffsets[topic]?.[partition] ?? manager?.committedOffsets()[topic]?.[partition];
    const text = offset === undefined || offset === null ? '' : String(offset);
    return /^\d+$/.test(text) ? BigInt(text) : undefined;
  };
}

export function install(state: KafkajsFixState): void {
  installOnce(state, 'group-join-hooks', () => {
    const ConsumerGroup = require(consumerGroupModulePath) as { prototype: KafkajsConsumerGroup };
    const hooksOf = (group: KafkajsConsumerGroup): GroupJoinHooks | undefined => {
      for (const assigner of group.assigners ?? []) {
        const hooks = state.groupHooks.get(assigner);
        if (hooks) return hooks;
      }
      return undefined;
    };
    const joinAndSync = ConsumerGroup.prototype.joinAndSync;
    state.originals.joinAndSync = joinAndSync;
    ConsumerGroup.prototype.joinAndSync = async function hookedJoinAndSync() {
      const hooks = hooksOf(this);
      hooks?.onGroup?.(this);
      if (hooks?.beforeJoin) await hooks.beforeJoin();
      return joinAndSync.call(this);
    };
    const seekOffsets = ConsumerGroup.prototype.seekOffsets;
    state.originals.seekOffsets = seekOffsets;
    // Applies pending seeks, then resolves the start offsets of the whole assignment (OffsetFetch,
    // then ListOffsets for partitions without a committed offset), before every fetch.
    ConsumerGroup.prototype.seekOffsets = async function resolvingSeekOffsets(topicPartitions) {
      await seekOffsets.call(this, topicPartitions);
      hooksOf(this)?.onOffsetsResolved?.(fetchOffsetReader(this.offsetManager));
    };
  });
}
