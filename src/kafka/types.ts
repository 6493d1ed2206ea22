/**
 * The Kafka vocabulary of fraudlink. Components speak only these types; the client library behind
 * them (kafkajs today) stays inside src/kafka/.
 */

export type HeaderValue = string | Buffer;

export interface OutgoingRecord {
  topic: string;
  key: string | Buffer | null;
  value: Buffer | null;
  headers?: Record<string, HeaderValue>;
  partition?: number;
  timestamp?: number;
}

export interface IncomingRecord {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | undefined>;
  timestamp: number;
  /**
   * Set on the one record that stands for a record batch that could not be read (unreadable-batches.ts):
   * it sits at the batch's last offset, with no key, value or headers; handling it moves the reader
   * past the whole batch.
   */
  unreadableBatch?: UnreadableBatch;
}

/** A record batch whose records could not be read: it did not decompress, or would pass the bound. */
export interface UnreadableBatch {
  /** The batch's base offset. */
  firstOffset: string;
  /** The batch's last offset (base offset + last offset delta), the standing record's own. */
  lastOffset: string;
  /** Kafka's name of its compression codec: gzip, snappy, lz4, zstd (or `codec N`). */
  codec: string;
  /** Why it could not be read (the codec's error). */
  reason: string;
  /** Its compressed records' size in bytes. */
  bytes: number;
  /** Its compressed records as they are (`bytes` long), for whoever keeps a copy. */
  data: Buffer;
}

export interface TopicPartitionOffset {
  topic: string;
  partition: number;
  /** The next offset to consume, as Kafka commits it. */
  offset: string;
}

export interface TopicSpec {
  topic: string;
  partitions: number;
  /** -1 takes the broker's default.replication.factor. */
  replicationFactor: number;
  configs: Record<string, string>;
  /** Set only when the topic is created here; an existing topic is not checked against them. */
  createConfigs?: Record<string, string>;
  /** When true, an existing topic with another partition count is refused. */
  exactPartitions?: boolean;
}

export interface KafkaAdmin {
  describeCluster(): Promise<{ brokers: number; controller: number | null; clusterId: string }>;
  provisionTopics(specs: TopicSpec[]): Promise<void>;
  /**
   * Offsets per partition: `low` is the first offset; `high` is the last stable offset (read_committed:
   * the high watermark, or the first offset of the oldest still-open transaction).
   */
  topicOffsets(topic: string): Promise<{ partition: number; low: string; high: string }[]>;
  /**
   * The topic's partition count from metadata, 0 when the cluster has no such topic. Any other
   * failure rejects (retriable ones after a few retries): it is not an answer about the topic.
   */
  partitionCount(topic: string): Promise<number>;
  groupOffsets(groupId: string, topic: string): Promise<{ partition: number; offset: string }[]>;
  /** The group's state as its coordinator reports it (`Empty`, `Stable`, `Dead`...) and its members' ids. */
  describeGroup(groupId: string): Promise<{ state: string; members: string[] }>;
  /** The largest record batch the topic accepts: its `max.message.bytes`, or the broker's default. */
  maxMessageBytes(topic: string): Promise<number>;
  deleteTopics(topics: string[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * A consumer group member as of its last join (Kafka's Java `ConsumerGroupMetadata`): the group's
 * generation and the member id the coordinator gave it.
 */
export interface GroupMembership {
  generationId: number;
  memberId: string;
  /** Static membership (KIP-345); kafkajs has none. */
  groupInstanceId?: string | null;
}

export interface SendOptions {
  /**
   * Topics whose records each go in a record batch of their own, in Produce requests one after
   * another. kafkajs puts all of a send's records for one partition in one batch, and a topic's
   * `max.message.bytes` limits the batch: a topic may take each record alone but not several together.
   */
  unbatchedTopics?: ReadonlySet<string>;
}

export interface TransactionOptions extends SendOptions {
  /** Consumed offsets committed atomically with the records (consume-transform-produce). */
  consumerOffsets?: {
    groupId: string;
    offsets: TopicPartitionOffset[];
    /**
     * The consuming member (`GroupConsumer.membership()`): the group coordinator then refuses the
     * offsets, and the transaction fails with MemberFencedError, once the member is no longer in the
     * group's current generation (KIP-447), e.g. after its session expired during a long pause and
     * its partitions went to other members. Without it the coordinator checks nothing.
     */
    membership?: GroupMembership | undefined;
  };
}

export interface Transaction {
  send(records: OutgoingRecord[], options?: SendOptions): Promise<void>;
  sendOffsets(offsets: NonNullable<TransactionOptions['consumerOffsets']>): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

export interface TransactionalProducer {
  /** Sends every record and commits them, with the offsets, in ONE transaction; aborts on failure. */
  transaction(records: OutgoingRecord[], options?: TransactionOptions): Promise<void>;
  /** Step by step, for callers that interleave work with an open transaction. */
  begin(): Promise<Transaction>;
  close(): Promise<void>;
}

export interface Producer {
  send(records: OutgoingRecord[]): Promise<void>;
  close(): Promise<void>;
}

export interface ConsumedBatch {
  topic: string;
  partition: number;
  records: IncomingRecord[];
  /** False once this consumer should stop handing out work (stopping or rebalancing). */
  isRunning(): boolean;
  /** True when the partition was taken away by a rebalance: its results must not be committed. */
  isStale(): boolean;
  /**
   * Tells the group this member is alive (at most once per heartbeat interval). The member
   * heartbeats by itself only between batches: a handler that may wait longer than the session
   * timeout calls this meanwhile. Rejects when the group is rebalancing; the handler should then
   * return by rejecting, and the member rejoins.
   */
  heartbeat(): Promise<void>;
}

export interface GroupConsumerOptions {
  groupId: string;
  topics: string[];
  /** `read_committed` unless said otherwise. */
  isolation?: 'read_committed' | 'read_uncommitted';
  fromBeginning?: boolean;
  /** When false (the default), offsets are committed by the caller, e.g. in a producer transaction. */
  autoCommit?: boolean;
  partitionsConsumedConcurrently?: number;
  /** Longest a fetch waits on the broker for new records (kafkajs maxWaitTimeInMs); default 100 ms. */
  maxWaitMs?: number;
  /** Called with each batch; the next batch of that partition is fetched once it resolves. */
  eachBatch(batch: ConsumedBatch): Promise<void>;
  /**
   * After a rejoin (a rebalance, or kafkajs restarting the member after a crash), read each partition
   * this member keeps on from the record after the last one handed to `eachBatch` (or, before any,
   * from where its first fetch in the assignment started), instead of from its committed offset or,
   * with none committed, `fromBeginning`'s choice; a partition assigned anew starts at the latter.
   * For members that commit nothing and start at the latest offset (a requester awaiting replies):
   * without it, records written while the member rejoined would be skipped.
   */
  resumeOnRejoin?: boolean;
  /**
   * Called before the member joins its group, each time (the first join, every rebalance, a
   * restart after a crash); the join waits until it resolves, and it should not reject. kafkajs's
   * rebalance is eager: every member gives up every partition and joins again, and the new owners
   * read the committed offsets once all have joined. A member that commits offsets in its own
   * transactions finishes the one under way here and starts none until `onAssignment`, so that no
   * transaction of the old assignment commits after a new owner read the offsets (which would
   * answer those records twice).
   */
  beforeJoin?(): Promise<void>;
  /**
   * Assignment changes: the partitions this member now owns, and its membership. kafkajs gives a
   * member that was cut off from its group (UNKNOWN_MEMBER_ID) a new member id when it rejoins: a
   * partition it holds again may have been another member's meanwhile.
   */
  onAssignment?(
    assigned: { topic: string; partitions: number[] }[],
    membership: GroupMembership | undefined,
  ): void;
  /**
   * The consumer failed. With `restarting`, kafkajs rejoins by itself (a retriable failure); without,
   * the member is gone and `start()`, if still waiting, rejects with the same error.
   */
  onCrash?(error: Error, restarting: boolean): void;
  /**
   * A sign of life of the member: each fetch it starts and each heartbeat it sends (also while
   * every partition is paused), for a liveness check that tells a wedged consumer from a busy one.
   */
  onActivity?(): void;
}

export interface TopicPartitions {
  topic: string;
  /** Omitted: every partition of the topic this member owns. */
  partitions?: number[];
}

export interface GroupConsumer {
  /**
   * Resolves once the consumer has joined its group, received its assignment and fetched once.
   * `signal` ends it at once (AbortedError), the consumer closed.
   */
  start(signal?: AbortSignal): Promise<void>;
  /**
   * After start(): stops fetching these partitions (back-pressure) without leaving the group;
   * batches in hand finish.
   */
  pause(partitions: TopicPartitions[]): void;
  resume(partitions: TopicPartitions[]): void;
  /**
   * The member's generation and id as of its last join, for a transaction committing its offsets
   * (`TransactionOptions`); undefined before the first join and after a crash.
   */
  membership(): GroupMembership | undefined;
  close(): Promise<void>;
}

export interface ReadTopicOptions {
  signal?: AbortSignal;
  /** Keep applying records after the end taken at start, until the signal aborts. */
  follow?: boolean;
  /** Called once every partition has reached the end offsets taken at start. */
  onCaughtUp?: () => void;
  onProgress?: (progress: { read: bigint; total: bigint }) => void;
  /**
   * Partition → the next offset to read there (a position kept by the caller, e.g. in a local store):
   * the read starts there instead of at the beginning, and what lies before it counts as read. An
   * offset below the first one still in the log reads from the first; partitions not named start at
   * the beginning.
   */
  startOffsets?: ReadonlyMap<number, bigint>;
  /**
   * Called whenever a partition's position moves: `next` is the offset after the last one a fetch
   * covered, delivered or not (markers and aborted records included), once `onRecords` has returned.
   */
  onPosition?: (partition: number, next: bigint) => void;
  /**
   * The most bytes one fetch brings (default 64 MiB, a quarter of it per partition): a reader that
   * keeps its memory low takes less, at some cost in speed.
   */
  fetchMaxBytes?: number;
  /**
   * Read to each partition's high watermark taken at start rather than to its last stable offset,
   * so that records committed after a transaction still open at start (another producer's, on a
   * shared topic) are read too: waits until every such transaction has ended, at most `timeoutMs`
   * (then fails, retriable). `onWaiting` is called once if it must wait.
   */
  awaitOpenTransactions?: AwaitOpenTransactions;
  /**
   * A record batch that cannot be read (`IncomingRecord.unreadableBatch`) reaches `onRecords` as its
   * one record when true; otherwise it ends the read with an UnreadableBatchError naming it.
   */
  deliverUnreadableBatches?: boolean;
}

export interface AwaitOpenTransactions {
  timeoutMs: number;
  onWaiting?: (behind: { lso: string; high: string }[]) => void;
}

/** What is at or after an offset of one partition, as a read_committed consumer sees it. */
export type RecordFrom =
  /** The first record delivered at or after the offset (after it: the offset held no record). */
  | { kind: 'record'; record: IncomingRecord }
  /** No record from the offset to the partition's last stable offset. */
  | { kind: 'end'; end: string }
  /** The fetch failed (a batch that does not decompress, say) or gave nothing in time. */
  | { kind: 'unreadable'; reason: string };

export interface ReadRecordOptions {
  /** How long to wait for the record before answering `unreadable`. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface TransactionalProducerOptions {
  transactionalId: string;
  /** An open transaction of a crashed instance is aborted by the broker after this long. */
  transactionTimeoutMs?: number;
  /**
   * Kafka's transaction protocol: `auto` (default) takes v2 (KIP-890, three requests a transaction)
   * where the cluster finalizes it, v1 (five) elsewhere; `v1` always takes v1. On v2 a transaction
   * that follows the same producer's last one at once waits out the broker's 20 ms retry of its
   * first partition while the last one's markers are written; on v1 kafkajs retries after 5 ms.
   */
  transactionProtocol?: 'auto' | 'v1';
  /** Ends the creation at once (AbortedError), the producer disconnected: a stop request. */
  signal?: AbortSignal;
}

/**
 * The one entry point to Kafka. Components hold this interface only: a second client library
 * (e.g. @platformatic/kafka) would implement it beside the kafkajs one, and no component would change.
 */
export interface KafkaClient {
  /**
   * Connected admin client; close it when done. `signal` ends the connect at once (AbortedError),
   * the client disconnected.
   */
  admin(options?: { signal?: AbortSignal }): Promise<KafkaAdmin>;
  /** Connected and initialised: creating it fences any older producer with the same transactional id. */
  transactionalProducer(options: TransactionalProducerOptions): Promise<TransactionalProducer>;
  /** Connected idempotent producer (no transactions). */
  producer(): Promise<Producer>;
  /** A group member; nothing happens before `start()`. */
  groupConsumer(options: GroupConsumerOptions): GroupConsumer;
  /**
   * Reads `topic` from its beginning to the end offsets taken at start (read_committed) and resolves;
   * with `follow`, goes on until the signal aborts. Nothing is committed: each read uses a
   * throwaway consumer group.
   */
  readTopic(
    topic: string,
    onRecords: (records: IncomingRecord[]) => void | Promise<void>,
    options?: ReadTopicOptions,
  ): Promise<void>;
  /**
   * The first record of `topic`'s `partition` at or after `offset` (read_committed), read by a
   * throwaway consumer group that commits nothing.
   */
  readRecordFrom(
    topic: string,
    partition: number,
    offset: string,
    options: ReadRecordOptions,
  ): Promise<RecordFrom>;
}
