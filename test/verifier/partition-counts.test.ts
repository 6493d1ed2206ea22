import { describe, expect, it } from 'vitest';
import { KafkaError } from '../../src/errors.ts';
import { cachedPartitionCounts } from '../../src/verifier/partition-counts.ts';

describe('cachedPartitionCounts', () => {
  it('shares one lookup per topic until it is ttlMs old, then reads again', async () => {
    let clock = 0;
    const asked: string[] = [];
    const counts = cachedPartitionCounts(
      async (topic) => {
        asked.push(topic);
        return asked.length;
      },
      60_000,
      () => clock,
    );
    expect(await Promise.all([counts('a'), counts('a'), counts('b')])).toEqual([1, 1, 2]);
    clock = 59_999;
    expect(await counts('a')).toBe(1);
    clock = 60_000;
    expect(await counts('a')).toBe(3);
    expect(asked).toEqual(['a', 'b', 'a']);
  });

  it('keeps no failed lookup: it rejects, and the next request asks again instead of taking 0', async () => {
    let fail = true;
    let asked = 0;
    const counts = cachedPartitionCounts(
      async () => {
        asked++;
        if (fail) throw new KafkaError('fetch metadata of replies: connection refused', { retriable: true });
        return 6;
      },
      60_000,
      () => 0,
    );
    await expect(counts('replies')).rejects.toThrow(/connection refused/);
    fail = false;
    expect(await counts('replies')).toBe(6);
    expect(asked).toBe(2);
  });

  it('keeps at most max topics, the least recently asked dropped first', async () => {
    const asked: string[] = [];
    const counts = cachedPartitionCounts(
      async (topic) => {
        asked.push(topic);
        return 1;
      },
      60_000,
      () => 0,
      2,
    );
    await counts('a');
    await counts('b');
    await counts('a');
    await counts('c');
    // b was the least recently asked of the two kept: asked again, a not.
    await counts('a');
    await counts('b');
    expect(asked).toEqual(['a', 'b', 'c', 'b']);
  });
});
