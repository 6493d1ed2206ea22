import { describe, expect, it } from 'vitest';
import { CommitLedger, IDLE_COMMIT_MS, InflightCommit } from '../../src/connector/commit-ledger.ts';
import type { ExportRequest } from '../../src/connector/cursor.ts';
import { KafkaError } from '../../src/errors.ts';

/** Where a cursor would read on from, set by hand. */
function position(request: ExportRequest = {}, highWaterMark: number | null = null) {
  const at = { request, highWaterMark };
  return {
    at,
    tracker: {
      nextRequest: () => at.request,
      get highWaterMark() {
        return at.highWaterMark;
      },
    },
  };
}

describe('CommitLedger', () => {
  it('has news when rows are held or the position moved since the last commit', () => {
    const { at, tracker } = position();
    const ledger = new CommitLedger(tracker, () => 0);
    expect(ledger.hasNews({ rows: 0 })).toBe(false);
    expect(ledger.hasNews({ rows: 1 })).toBe(true);
    at.request = { cursor: 'c1' };
    expect(ledger.hasNews({ rows: 0 })).toBe(true);
    ledger.committed();
    expect(ledger.hasNews({ rows: 0 })).toBe(false);
    at.highWaterMark = 1000;
    expect(ledger.hasNews({ rows: 0 })).toBe(true);
  });

  it('is idle IDLE_COMMIT_MS after the last commit, the session start counting as one', () => {
    let now = 100;
    const ledger = new CommitLedger(position().tracker, () => now);
    now += IDLE_COMMIT_MS - 1;
    expect(ledger.isIdle()).toBe(false);
    now += 1;
    expect(ledger.isIdle()).toBe(true);
    ledger.committed();
    expect(ledger.isIdle()).toBe(false);
  });
});

describe('InflightCommit', () => {
  it('starts a commit only once the one before it is through, without waiting for the new one', async () => {
    const commits = new InflightCommit();
    const first = Promise.withResolvers<void>();
    const started: string[] = [];
    await commits.start(() => {
      started.push('first');
      return first.promise;
    });
    const second = commits.start(async () => {
      started.push('second');
      await new Promise<void>(() => {}); // never through: start() must not wait for it
    });
    await Promise.resolve();
    expect(started).toEqual(['first']);
    first.resolve();
    await second;
    expect(started).toEqual(['first', 'second']);
  });

  it('passes a failed commit on to the next start and to settle, and finish resolves with it', async () => {
    const failure = new KafkaError('broker went away', { retriable: true });
    const commits = new InflightCommit();
    await commits.start(() => Promise.reject(failure));
    await expect(commits.start(async () => {})).rejects.toBe(failure);
    await expect(commits.settle()).rejects.toBe(failure);
    await expect(commits.finish()).resolves.toBe(failure);
  });

  it('settles and finishes at once with no commit running', async () => {
    const commits = new InflightCommit();
    await commits.settle();
    await expect(commits.finish()).resolves.toBeUndefined();
    await commits.start(async () => {});
    await commits.settle();
    await expect(commits.finish()).resolves.toBeUndefined();
  });
});
