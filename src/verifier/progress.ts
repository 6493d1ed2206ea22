const keyOf = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

function partitionOf(key: string): TopicPartition {
  const [topic = '', partition = '0'] = key.split('\u0000');
  return { topic, partition: Number(partition) };
}

/** One consumed request, from dispatch until its replies are committed. */
export interface Dispatched<R> {
  /** Its partition's key in PartitionProgress. */
  readonly key: string;
  readonly offset: bigint;
  done: boolean;
  /** Its partition was taken away: the new owner answers it. */
  dropped: boolean;
  records: R[];
  /** What its records weigh (PartitionProgress's `sizeOf`), once done. */
  bytes: number;
}

interface PartitionState<R> {
  /** The offset after the last one dispatched. */
  next: bigint;
  queue: Dispatched<R>[];
  /** The requests finished and not yet taken for a commit, and the bytes of their records. */
  held: HeldLoad;
}

/** Finished-but-uncommitted work: how many requests, and the bytes of the records answering them. */
export interface HeldLoad {
  replies: number;
  bytes: number;
}

/** A partition of the requests topic. */
export interface TopicPartition {
  topic: string;
  partition: number;
}

/**
 * Tracks requests in flight per partition so that replies are committed only together with the
 * consumed offsets that cover them. A reply finished out of order waits until every earlier request
 * of its partition has finished too: committing it alone would let a crash replay the request and
 * publish a second reply.
 *
 * After every rebalance kafkajs fetches each assigned partition again from its committed offset, also
 * a partition this member keeps: the requests it delivers again are in flight here or already
 * answered, and `dispatch` refuses them, so each gets one reply and its partition never waits on a
 * copy that nobody completes.
 */
export class PartitionProgress<R> {
  readonly #partitions = new Map<string, PartitionState<R>>();
  readonly #sizeOf: (record: R) => number;
  readonly #total: HeldLoad = { replies: 0, bytes: 0 };

  /** `sizeOf` weighs a record held until its commit (for the limits of PartitionLimits). */
  constructor(sizeOf: (record: R) => number = () => 0) {
    this.#sizeOf = sizeOf;
  }

  /**
   * Registers a consumed record; offsets of one partition arrive in increasing order. Returns
   * undefined for an offset this instance has dispatched already.
   */
  dispatch(topic: string, partition: number, offset: string): Dispatched<R> | undefined {
    const key = keyOf(topic, partition);
    const at = BigInt(offset);
    let state = this.#partitions.get(key);
    if (!state) {
      state = { next: at, queue: [], held: { replies: 0, bytes: 0 } };
      this.#partitions.set(key, state);
    }
    if (at < state.next) return undefined;
    state.next = at + 1n;
    const entry: Dispatched<R> = { key, offset: at, done: false, dropped: false, records: [], bytes: 0 };
    state.queue.push(entry);
    return entry;
  }

  /**
   * Marks a request finished with the records (reply, DLQ copy) it produces. Returns false when its
   * partition was taken away meanwhile: nothing of it will be committed here.
   */
  complete(entry: Dispatched<R>, records: R[]): boolean {
    if (entry.dropped) return false;
    entry.done = true;
    entry.records = records;
    let bytes = 0;
    for (const record of records) bytes += this.#sizeOf(record);
    entry.bytes = bytes;
    const held = this.#partitions.get(entry.key)?.held;
    if (held) this.#hold(held, 1, bytes);
    return true;
  }

  #hold(held: HeldLoad, replies: number, bytes: number): void {
    held.replies += replies;
    held.bytes += bytes;
    this.#total.replies += replies;
    this.#total.bytes += bytes;
  }

  /** What a partition holds finished and uncommitted (nothing for one not tracked). */
  held(topic: string, partition: number): HeldLoad {
    const held = this.#partitions.get(keyOf(topic, partition))?.held;
    return held ? { ...held } : { replies: 0, bytes: 0 };
  }

  /** What every partition holds together, finished and uncommitted. */
  get totalHeld(): HeldLoad {
    return { ...this.#total };
  }

  /** The partitions tracked now (dispatched to since they were last dropped). */
  partitions(): TopicPartition[] {
    return [...this.#partitions.keys()].map(partitionOf);
  }

  /** Removes and returns every finished prefix: its records, and the next offset to consume per partition. */
  takeCommittable(): { records: R[]; offsets: { topic: string; partition: number; offset: string }[] } {
    const records: R[] = [];
    const offsets: { topic: string; partition: number; offset: string }[] = [];
    for (const [key, { queue, held }] of this.#partitions) {
      let n = 0;
      let bytes = 0;
      while (n < queue.length && queue[n]?.done) {
        records.push(...(queue[n]?.records ?? []));
        bytes += queue[n]?.bytes ?? 0;
        n++;
      }
      if (n === 0) continue;
      const last = queue[n - 1];
      queue.splice(0, n);
      this.#hold(held, -n, -bytes);
      const { topic, partition } = partitionOf(key);
      offsets.push({ topic, partition, offset: String((last?.offset ?? 0n) + 1n) });
    }
    return { records, offsets };
  }

  /**
   * Forgets partitions this instance no longer owns; their work will be redone by the new owner. A
   * partition that comes back later starts afresh from its committed offset.
   */
  retain(owned: (topic: string, partition: number) => boolean): void {
    for (const [key, state] of this.#partitions) {
      const { topic, partition } = partitionOf(key);
      if (owned(topic, partition)) continue;
      for (const entry of state.queue) entry.dropped = true;
      this.#hold(state.held, -state.held.replies, -state.held.bytes);
      this.#partitions.delete(key);
    }
  }

  get inFlight(): number {
    let n = 0;
    for (const { queue } of this.#partitions.values()) for (const e of queue) if (!e.done) n++;
    return n;
  }
}
