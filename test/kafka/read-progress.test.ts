import { describe, expect, it } from 'vitest';
import { createReadProgress } from '../../src/kafka/read-progress.ts';

describe('read-to-the-end progress', () => {
  it('is caught up at once on an empty topic and on partitions emptied by retention', () => {
    const progress = createReadProgress([
      { partition: 0, low: '0', high: '0' },
      { partition: 1, low: '7', high: '7' },
    ]);
    expect(progress.caughtUp()).toBe(true);
    expect(progress.total).toBe(0n);
  });

  it('reaches the end when the covered offsets include the trailing markers, not when records are counted', () => {
    // Offsets 0-1 records, 2 commit marker, 3 aborted record, 4 abort marker: high (LSO) is 5.
    const progress = createReadProgress([{ partition: 0, low: '0', high: '5' }]);
    progress.advance(0, '1');
    expect(progress.caughtUp()).toBe(false);
    progress.advance(0, '4');
    expect(progress.caughtUp()).toBe(true);
    expect(progress.read).toBe(progress.total);
  });

  it('waits for every partition', () => {
    const progress = createReadProgress([
      { partition: 0, low: '0', high: '3' },
      { partition: 1, low: '0', high: '2' },
    ]);
    progress.advance(0, '2');
    expect(progress.caughtUp()).toBe(false);
    progress.advance(1, '1');
    expect(progress.caughtUp()).toBe(true);
  });

  it('counts progress from the first offset still in the log and caps it at the end taken at start', () => {
    const progress = createReadProgress([{ partition: 0, low: '100', high: '110' }]);
    expect(progress.total).toBe(10n);
    progress.advance(0, '104');
    expect(progress.read).toBe(5n);
    progress.advance(0, '250'); // records written after the start
    expect(progress.read).toBe(10n);
    expect(progress.caughtUp()).toBe(true);
  });

  it('gives the next offset to read and ignores a position going back after a rejoin', () => {
    const progress = createReadProgress([{ partition: 0, low: '0', high: '10' }]);
    expect(progress.next(0)).toBeUndefined();
    expect(progress.advance(0, '5')).toBe(true);
    expect(progress.advance(0, '3')).toBe(false);
    expect(progress.advance(0, '5')).toBe(false);
    expect(progress.next(0)).toBe(6n);
    expect(progress.read).toBe(6n);
  });

  it('handles offsets beyond 2^53 exactly', () => {
    const high = (2n ** 60n).toString();
    const progress = createReadProgress([{ partition: 0, low: (2n ** 60n - 3n).toString(), high }]);
    progress.advance(0, (2n ** 60n - 2n).toString());
    expect(progress.caughtUp()).toBe(false);
    progress.advance(0, (2n ** 60n - 1n).toString());
    expect(progress.caughtUp()).toBe(true);
    expect(progress.read).toBe(3n);
  });
});
