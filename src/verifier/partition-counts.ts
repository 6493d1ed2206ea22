import { LRUCache } from 'lru-cache';

/**
 * How many reply topics' partition counts are kept, the least recently asked dropped first: the
 * topics are the requesters' `kafka_replyTopic` headers, any number of names.
 */
export const PARTITION_COUNT_CACHE_MAX = 1000;

/**
 * Reply topics' partition counts, each read again once `ttlMs` old, so that a topic created or given
 * more partitions since is seen; at most `max` topics are kept. A lookup in progress is shared by the requests that ask meanwhile.
 *
 * A failed lookup (a broker unreachable past the admin's retries) is not kept, nor taken for "no such
 * topic": that would send the topic's replies to the default topic until it expired. It fails the
 * request's handling instead, which stops the verifier before anything of it is committed.
 */
export function cachedPartitionCounts(
  lookup: (topic: string) => Promise<number>,
  ttlMs: number,
  now: () => number = () => performance.now(),
  max = PARTITION_COUNT_CACHE_MAX,
): (topic: string) => Promise<number> {
  const known = new LRUCache<string, { partitions: Promise<number>; at: number }>({ max });
  return (topic) => {
    const cached = known.get(topic);
    if (cached !== undefined && now() - cached.at < ttlMs) return cached.partitions;
    const partitions = lookup(topic);
    known.set(topic, { partitions, at: now() });
    partitions.catch(() => {
      if (known.get(topic)?.partitions === partitions) known.delete(topic);
    });
    return partitions;
  };
}
