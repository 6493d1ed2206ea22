// kafkajs sends a FindCoordinator request before every AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
// (the transaction coordinator) and TxnOffsetCommit (the group coordinator): four round trips per
// transaction that tell it nothing new, and the verifier commits many small transactions. Measured
// on Kafka 4.3.1 with one-record transactions: 1,314 FindCoordinator requests for 300 transactions.
//
// kafkajs has had no release since 2023, so the lookup is cached here, on its Cluster class, for a
// short time: a coordinator that moves is found again within COORDINATOR_TTL_MS, and any failure of
// a transaction step forgets every cached coordinator at once (forgetCoordinators), so kafkajs's own
// retries and the next transaction look up afresh.
import { createRequire } from 'node:module';
import { kafkajsPath } from './kafkajs-path.ts';

const COORDINATOR_TTL_MS = 1000;

interface CoordinatorLookup {
  (this: object, args: { groupId: string; coordinatorType?: number }): Promise<unknown>;
  cached?: true;
}

let generation = 0;

/** Forgets every cached coordinator (call on any failed coordinator request). */
export function forgetCoordinators(): void {
  generation++;
}

/** Installs the cache on kafkajs's Cluster class; idempotent. */
export function cacheCoordinatorLookups(): void {
  const require = createRequire(import.meta.url);
  const Cluster = require(kafkajsPath('cluster/index.js')) as {
    prototype: Record<string, unknown>;
  };
  const original = Cluster.prototype.findGroupCoordinatorMetadata as CoordinatorLookup | undefined;
  if (typeof original !== 'function') {
    throw new Error('kafkajs changed: Cluster.prototype.findGroupCoordinatorMetadata is missing');
  }
  if (original.cached) return;
  const caches = new WeakMap<object, Map<string, { value: unknown; until: number; generation: number }>>();
  const cachedLookup: CoordinatorLookup = async function (this: object, args) {
    let cache = caches.get(this);
    if (!cache) {
      cache = new Map();
      caches.set(this, cache);
    }
    const key = `${args.coordinatorType ?? 0}:${args.groupId}`;
    const hit = cache.get(key);
    const now = Date.now();
    if (hit && hit.until > now && hit.generation === generation) return hit.value;
    const value = await original.call(this, args);
    cache.set(key, { value, until: now + COORDINATOR_TTL_MS, generation });
    return value;
  };
  cachedLookup.cached = true;
  Cluster.prototype.findGroupCoordinatorMetadata = cachedLookup;
}
