/**
 * Tracks requests in flight per partition so that replies are committed only together with the
 * consumed offsets that cover them. A reply finished out of order waits until every earlier request
 * of its partition has finished too: committing it alone would let a crash replay the request and
 * publish a second reply.
 */
export class PartitionProgress<R> {
  readonly #pending = new Map<string, { offset: bigint; done: boolean; records: R[] }[]>();

  /** Registers a consumed record; offsets of one partition arrive in increasing order. */
  dispatch(topic: string, partition: number, offset: string): void {
    const key = `${topic}\u0000${partition}`;
    let queue = this.#pending.get(key);
    if (!queue) {
      queue = [];
      this.#pending.set(key, queue);
    }
    queue.push({ offset: BigInt(offset), done: false, records: [] });
  }

  /** Marks a record finished with the records (reply, DLQ copy) it produces. */
  complete(topic: string, partition: number, offset: string, records: R[]): void {
    const queue = this.#pending.get(`${topic}\u0000${partition}`);
    const target = BigInt(offset);
    const entry = queue?.find((e) => e.offset === target);
    if (!entry) throw new Error(`offset ${offset} of ${topic}/${partition} was never dispatched`);
    entry.done = true;
    entry.records = records;
  }

  /** Removes and returns every finished prefix: its records, and the next offset to consume per partition. */
  takeCommittable(): { records: R[]; offsets: { topic: string; partition: number; offset: string }[] } {
    const records: R[] = [];
    const offsets: { topic: string; partition: number; offset: string }[] = [];
    for (const [key, queue] of this.#pending) {
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

  /** Forgets partitions this instance no longer owns; their work will be redone by the new owner. */
  retain(owned: (topic: string, partition: number) => boolean): void {
    for (const key of this.#pending.keys()) {
      const [topic = '', partition = '0'] = key.split('\u0000');
      if (!owned(topic, Number(partition))) this.#pending.delete(key);
    }
  }

  get inFlight(): number {
    let n = 0;
    for (const queue of this.#pending.values()) for (const e of queue) if (!e.done) n++;
    return n;
  }
}
