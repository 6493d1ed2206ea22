import { describe, expect, it } from 'vitest';
import { type Dispatched, PartitionProgress } from '../../src/verifier/progress.ts';

/** Dispatches offsets that must all be new. */
function dispatchAll(p: PartitionProgress<string>, partition: number, offsets: string[]) {
  return offsets.map((o) => {
    const d = p.dispatch('req', partition, o);
    if (!d) throw new Error(`offset ${o} refused`);
    return d;
  });
}

describe('PartitionProgress', () => {
  it('commits a reply only when every earlier request of its partition has finished', () => {
    const p = new PartitionProgress<string>();
    const [d10, d11, d12] = dispatchAll(p, 0, ['10', '11', '12']) as Dispatched<string>[];
    p.complete(d12 as Dispatched<string>, ['reply-12']);
    expect(p.takeCommittable()).toEqual({ records: [], offsets: [] });
    p.complete(d10 as Dispatched<string>, ['reply-10']);
    expect(p.takeCommittable()).toEqual({
      records: ['reply-10'],
      offsets: [{ topic: 'req', partition: 0, offset: '11' }],
    });
    p.complete(d11 as Dispatched<string>, ['reply-11', 'dlq-11']);
    expect(p.takeCommittable()).toEqual({
      records: ['reply-11', 'dlq-11', 'reply-12'],
      offsets: [{ topic: 'req', partition: 0, offset: '13' }],
    });
    expect(p.inFlight).toBe(0);
  });

  it('keeps partitions independent', () => {
    const p = new PartitionProgress<string>();
    dispatchAll(p, 0, ['5']);
    const [d7] = dispatchAll(p, 1, ['7']);
    p.complete(d7 as Dispatched<string>, ['b']);
    expect(p.takeCommittable().offsets).toEqual([{ topic: 'req', partition: 1, offset: '8' }]);
    expect(p.inFlight).toBe(1);
  });

  it('drops the work of partitions taken away by a rebalance', () => {
    const p = new PartitionProgress<string>();
    const [lost] = dispatchAll(p, 0, ['1']);
    dispatchAll(p, 1, ['1']);
    p.retain((_t, partition) => partition === 1);
    expect(p.inFlight).toBe(1);
    expect(p.complete(lost as Dispatched<string>, ['reply'])).toBe(false);
    expect(p.takeCommittable()).toEqual({ records: [], offsets: [] });
    // Given back later, the partition is read again from its committed offset, and that is new work.
    expect(p.dispatch('req', 0, '1')).toBeDefined();
  });

  it('refuses what a kept partition delivers again after a rebalance, in flight or finished', () => {
    const p = new PartitionProgress<string>();
    const [d0, d1] = dispatchAll(p, 0, ['0', '1', '2']) as Dispatched<string>[];
    p.complete(d0 as Dispatched<string>, ['reply-0']);
    expect(p.takeCommittable().offsets).toEqual([{ topic: 'req', partition: 0, offset: '1' }]);
    p.complete(d1 as Dispatched<string>, ['reply-1']);
    p.retain(() => true);
    // kafkajs starts again at the committed offset (0 if the commit above has not landed yet).
    for (const o of ['0', '1', '2']) expect(p.dispatch('req', 0, o)).toBeUndefined();
    const [d3] = dispatchAll(p, 0, ['3']);
    expect(d3?.offset).toBe(3n);
    expect(p.inFlight).toBe(2);
  });
});

describe('PartitionProgress held load', () => {
  it('counts the finished, uncommitted requests and their bytes per partition and in all, until taken or dropped', () => {
    const p = new PartitionProgress<string>((r) => r.length);
    const [a0, a1, a2] = dispatchAll(p, 0, ['0', '1', '2']) as Dispatched<string>[];
    const [b0] = dispatchAll(p, 1, ['0']) as Dispatched<string>[];
    p.complete(a1 as Dispatched<string>, ['reply', 'dlq-copy']);
    p.complete(a2 as Dispatched<string>, ['reply']);
    p.complete(b0 as Dispatched<string>, ['xy']);
    expect(p.held('req', 0)).toEqual({ replies: 2, bytes: 18 });
    expect(p.totalHeld).toEqual({ replies: 3, bytes: 20 });
    p.takeCommittable(); // partition 1's request; partition 0 waits for offset 0
    expect(p.held('req', 1)).toEqual({ replies: 0, bytes: 0 });
    expect(p.totalHeld).toEqual({ replies: 2, bytes: 18 });
    p.complete(a0 as Dispatched<string>, ['r']);
    p.takeCommittable();
    expect(p.totalHeld).toEqual({ replies: 0, bytes: 0 });
    const [a3] = dispatchAll(p, 0, ['3', '4']) as Dispatched<string>[];
    p.complete(a3 as Dispatched<string>, ['reply']);
    p.retain(() => false);
    expect(p.totalHeld).toEqual({ replies: 0, bytes: 0 });
    expect(p.partitions()).toEqual([]);
  });
});
