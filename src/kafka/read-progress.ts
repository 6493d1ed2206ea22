/**
 * Where a read-to-the-end stands, per partition. Pure bookkeeping, no Kafka calls.
 *
 * The end of a partition is its last stable offset taken at start (`high`). Under read_committed the
 * offsets just before it may hold records never delivered: commit/abort markers (control records)
 * and aborted records. So the end is reached when the consumed position — the last offset a fetch
 * covered, delivered or not — is at least `high - 1`, never by counting delivered records.
 */
export interface PartitionEnd {
  partition: number;
  /** First offset still in the log. */
  low: string;
  /** Last stable offset at start: the next offset after the end to reach. */
  high: string;
}

export interface ReadProgress {
  /** Offsets between `low` and `high` at start, over every partition (markers included). */
  readonly total: bigint;
  /** Offsets of that span covered so far. */
  readonly read: bigint;
  /** True once every partition has reached its end (at once for an empty topic). */
  caughtUp(): boolean;
  /** The next offset to read in `partition`, or undefined before anything was consumed there. */
  next(partition: number): bigint | undefined;
  /**
   * Records that a fetch of `partition` covered offsets up to `lastOffset` (markers included).
   * Returns true when the position moved forward; going back (a re-fetch after a rebalance) is ignored.
   */
  advance(partition: number, lastOffset: string | bigint): boolean;
}

export function createReadProgress(ends: readonly PartitionEnd[]): ReadProgress {
  /** Partition → last offset of its span, for partitions not caught up yet. */
  const pending = new Map<number, bigint>();
  const start = new Map<number, bigint>();
  const lastOf = new Map<number, bigint>();
  const position = new Map<number, bigint>();
  let total = 0n;
  let read = 0n;
  for (const end of ends) {
    const low = BigInt(end.low);
    const high = BigInt(end.high);
    start.set(end.partition, low);
    if (high > low) {
      pending.set(end.partition, high - 1n);
      lastOf.set(end.partition, high - 1n);
      total += high - low;
    }
  }
  const covered = (partition: number, offset: bigint): bigint => {
    const last = lastOf.get(partition);
    const low = start.get(partition) ?? 0n;
    if (last === undefined || offset < low) return 0n;
    return (offset < last ? offset : last) - low + 1n;
  };
  return {
    get total() {
      return total;
    },
    get read() {
      return read;
    },
    caughtUp: () => pending.size === 0,
    next(partition) {
      const p = position.get(partition);
      return p === undefined ? undefined : p + 1n;
    },
    advance(partition, lastOffset) {
      const offset = BigInt(lastOffset);
      const previous = position.get(partition);
      if (previous !== undefined && offset <= previous) return false;
      position.set(partition, offset);
      read += covered(partition, offset) - (previous === undefined ? 0n : covered(partition, previous));
      const last = pending.get(partition);
      if (last !== undefined && offset >= last) pending.delete(partition);
      return true;
    },
  };
}
