/**
 * Reply topics' partition counts, each read again once `ttlMs` old, so that a topic created or given
 * more partitions since is seen. A lookup in progress is shared by the requests that ask meanwhile.
 *
 * A failed lookup (a broker unreachable past the admin's retries) is not kept, nor taken for "no such
 * topic": that would send the topic's replies to the default topic until it expired. It fails the
 * request's handling instead, which stops the verifier before anything of it is committed.
 */
export function cachedPartitionCounts(
  lookup: (topic: string) => Promise<number>,
  ttlMs: number,
  now: () => number = () => performance.now(),
): (topic: string) => Promise<number> {
  const known = new Map<string, { partitions: Promise<number>; at: number }>();
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
