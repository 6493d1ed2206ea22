/** One consumed request, from dispatch until its replies are committed. */
export interface Dispatched<R> {
  readonly offset: bigint;
  done: boolean;
  /** Its partition was taken away: the new owner answers it. */
  dropped: boolean;
  records: R[];
}

interface PartitionState<R> {
  /** The offset after the last one dispatched. */
  next: bigint;
  queue: Dispatched<R>[];
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

  /**
   * Registers a consumed record; offsets of one partition arrive in increasing order. Returns
   * undefined for an offset this instance has dispatched already.
   */
  dispatch(topic: string, partition: number, offset: string): Dispatched<R> | undefined {
    const key = `${topic}\u0000${partition}`;
    const at = BigInt(offset);
    let state = this.#partitions.get(key);
    if (!state) {
      state = { next: at, queue: [] };
      this.#partitions.set(key, state);
    }
    if (at < state.next) return undefined;
    state.next = at + 1n;
    const entry: Dispatched<R> = { offset: at, done: false, dropped: false, records: [] };
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
    return true;
  }

  /** Removes and returns every finished prefix: its records, and the next offset to consume per partition. */
  takeCommittable(): { records: R[]; offsets: { topic: string; partition: number; offset: string }[] } {
    const records: R[] = [];
    const offsets: { topic: string; partition: number; offset: string }[] = [];
    for (const [key, { queue }] of this.#partitions) {
      let n = 0;
      while (n < queue.length && queue[n]?.done) {
        records.push(...(queue[n]?.records ?? []));
        n++;
      }
      if (n === 0) continue;
      const last = queue[n - 1];
      queue.splice(0, n);
      const [topic = '', partition = '0'] = key.split('\u0000');
      offsets.push({ topic, partition: Number(partition), offset: String((last?.offset ?? 0n) + 1n) });
    }
    return { records, offsets };
  }

  /**
   * Forgets partitions this instance no longer owns; their work will be redone by the new owner. A
   * partition that comes back later starts afresh from its committed offset.
   */
  retain(owned: (topic: string, partition: number) => boolean): void {
    for (const [key, state] of this.#partitions) {
      const [topic = '', partition = '0'] = key.split('\u0000');
      if (owned(topic, Number(partition))) continue;
      for (const entry of state.queue) entry.dropped = true;
      this.#partitions.delete(key);
    }
  }

  get inFlight(): number {
    let n = 0;
    for (const { queue } of this.#partitions.values()) for (const e of queue) if (!e.done) n++;
    return n;
  }
}
