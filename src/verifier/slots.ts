import { settledWithin } from '../retry.ts';

/** How often a batch waiting for a free slot heartbeats (the consumer's heartbeat interval). */
const HEARTBEAT_WHILE_WAITING_MS = 1000;

/** A counting semaphore: bounds the requests in flight (VERIFY_CONCURRENCY). */
export class Slots {
  #free: number;
  #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  /** Takes a slot if one is free. */
  tryAcquire(): boolean {
    if (this.#free === 0) return false;
    this.#free--;
    return true;
  }
  async acquire(): Promise<void> {
    if (this.tryAcquire()) return;
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }
  /**
   * A free slot, calling `heartbeat` every second while none is: the member heartbeats by itself
   * only between batches, and a batch waiting here longer than the session timeout (a slow
   * upstream, long deadlines) would get it evicted while it still answers its partitions'
   * requests, which their next owner answers too. A heartbeat that throws (the group rebalancing)
   * ends the wait with its error; the slot, once free, is given back.
   */
  async acquireHeartbeating(heartbeat: () => Promise<void>): Promise<void> {
    if (this.tryAcquire()) return;
    const slot = this.acquire().then(() => true);
    for (;;) {
      if (await settledWithin(slot, HEARTBEAT_WHILE_WAITING_MS)) return;
      try {
        await heartbeat();
      } catch (err) {
        void slot.then(() => this.release());
        throw err;
      }
    }
  }
  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}
