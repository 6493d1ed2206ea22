import { createRequire } from 'node:module';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { cacheCoordinatorLookups, forgetCoordinators } from '../../src/kafka/coordinator-cache.ts';

type Lookup = (args: { groupId: string; coordinatorType?: number }) => Promise<unknown>;
const Cluster = createRequire(import.meta.url)('@fraudlink/kafkajs/src/cluster/index.js') as {
  prototype: { findGroupCoordinatorMetadata: Lookup };
};

/**
 * A stand-in for kafkajs's Cluster instance with just what its own findGroupCoordinatorMetadata uses
 * (brokerPool.withBroker, retrier, logger), so the real kafkajs method runs under the cache and a
 * kafkajs that changed shape fails here.
 */
function fakeCluster() {
  const asked: string[] = [];
  const cluster = {
    asked,
    brokerPool: {
      withBroker: (fn: (b: { nodeId: number; broker: unknown }) => Promise<unknown>) =>
        fn({
          nodeId: 1,
          broker: {
            async findGroupCoordinator({ groupId }: { groupId: string }) {
              asked.push(groupId);
              return { coordinator: { nodeId: 1, host: 'localhost', port: 9092 }, host: 'localhost' };
            },
          },
        }),
    },
    retrier: (fn: (bail: (e: unknown) => void, n: number, t: number) => Promise<unknown>) =>
      fn(
        (e) => {
          throw e;
        },
        0,
        0,
      ),
    logger: { debug() {} },
    lookup(groupId: string, coordinatorType = 0) {
      return Cluster.prototype.findGroupCoordinatorMetadata.call(this, { groupId, coordinatorType });
    },
  };
  return cluster;
}

describe('coordinator lookups cached on kafkajs', () => {
  beforeAll(() => {
    cacheCoordinatorLookups();
    cacheCoordinatorLookups(); // idempotent: never wraps twice
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('asks the cluster once for repeated lookups of one coordinator', async () => {
    const cluster = fakeCluster();
    const first = await cluster.lookup('txn-a', 1);
    await cluster.lookup('txn-a', 1);
    await cluster.lookup('txn-a', 1);
    expect(first).toMatchObject({ coordinator: { nodeId: 1 } });
    expect(cluster.asked).toEqual(['txn-a']);
  });

  it('keeps coordinators apart by key, type and cluster instance', async () => {
    const one = fakeCluster();
    const two = fakeCluster();
    await one.lookup('id', 1);
    await one.lookup('id', 0);
    await one.lookup('other', 1);
    await two.lookup('id', 1);
    expect(one.asked).toEqual(['id', 'id', 'other']);
    expect(two.asked).toEqual(['id']);
  });

  it('asks again once the entry is a second old', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const cluster = fakeCluster();
    await cluster.lookup('txn-b', 1);
    vi.advanceTimersByTime(999);
    await cluster.lookup('txn-b', 1);
    vi.advanceTimersByTime(2);
    await cluster.lookup('txn-b', 1);
    expect(cluster.asked).toEqual(['txn-b', 'txn-b']);
  });

  it('asks again after forgetCoordinators (a failed transaction step)', async () => {
    const cluster = fakeCluster();
    await cluster.lookup('txn-c', 1);
    forgetCoordinators();
    await cluster.lookup('txn-c', 1);
    await cluster.lookup('txn-c', 1);
    expect(cluster.asked).toEqual(['txn-c', 'txn-c']);
  });

  it('does not cache a failed lookup', async () => {
    const cluster = fakeCluster();
    let fail = true;
    const broker = {
      async findGroupCoordinator() {
        cluster.asked.push('x');
        if (fail) throw Object.assign(new Error('no coordinator'), { type: 'UNKNOWN' });
        return { coordinator: { nodeId: 1 } };
      },
    };
    cluster.brokerPool.withBroker = (fn) => fn({ nodeId: 1, broker });
    await expect(cluster.lookup('txn-d', 1)).rejects.toThrow('no coordinator');
    fail = false;
    await cluster.lookup('txn-d', 1);
    expect(cluster.asked).toEqual(['x', 'x']);
  });
});
