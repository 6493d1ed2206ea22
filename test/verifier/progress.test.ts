import { describe, expect, it } from 'vitest';
import { PartitionProgress } from '../../src/verifier/progress.ts';

describe('PartitionProgress', () => {
  it('commits a reply only when every earlier request of its partition has finished', () => {
    const p = new PartitionProgress<string>();
    for (const o of ['10', '11', '12']) p.dispatch('req', 0, o);
    p.complete('req', 0, '12', ['reply-12']);
    expect(p.takeCommittable()).toEqual({ records: [], offsets: [] });
    p.complete('req', 0, '10', ['reply-10']);
    expect(p.takeCommittable()).toEqual({
      records: ['reply-10'],
      offsets: [{ topic: 'req', partition: 0, offset: '11' }],
    });
    p.complete('req', 0, '11', ['reply-11', 'dlq-11']);
    expect(p.takeCommittable()).toEqual({
      records: ['reply-11', 'dlq-11', 'reply-12'],
      offsets: [{ topic: 'req', partition: 0, offset: '13' }],
    });
    expect(p.inFlight).toBe(0);
  });

  it('keeps partitions independent', () => {
    const p = new PartitionProgress<string>();
    p.dispatch('req', 0, '5');
    p.dispatch('req', 1, '7');
    p.complete('req', 1, '7', ['b']);
    expect(p.takeCommittable().offsets).toEqual([{ topic: 'req', partition: 1, offset: '8' }]);
    expect(p.inFlight).toBe(1);
  });

  it('drops the work of partitions taken away by a rebalance', () => {
    const p = new PartitionProgress<string>();
    p.dispatch('req', 0, '1');
    p.dispatch('req', 1, '1');
    p.retain((_t, partition) => partition === 1);
    expect(p.inFlight).toBe(1);
    expect(() => p.complete('req', 0, '1', [])).toThrow(/never dispatched/);
  });
});
