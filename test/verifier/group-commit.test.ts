import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GroupCommit } from '../../src/verifier/group-commit.ts';

/** A commit whose end the test decides, recording when each one started (fake clock ms). */
function controlledCommits() {
  const starts: number[] = [];
  const ends: (() => void)[] = [];
  const commit = () => {
    starts.push(Date.now());
    return new Promise<void>((resolve) => ends.push(resolve));
  };
  /** Ends the oldest running commit and lets its continuations run. */
  const finishNext = async () => {
    ends.shift()?.();
    await vi.advanceTimersByTimeAsync(0);
  };
  return { starts, commit, finishNext };
}

describe('GroupCommit', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('commits at once when idle, then groups what became ready into one commit after the interval', async () => {
    const { starts, commit, finishNext } = controlledCommits();
    const group = new GroupCommit({ commit, intervalMs: 10, onError: () => {}, now: Date.now });
    group.request();
    expect(starts).toEqual([0]);
    await vi.advanceTimersByTimeAsync(2);
    group.request(); // while the first commit runs
    group.request();
    await vi.advanceTimersByTimeAsync(1);
    await finishNext(); // first commit ends at 3 ms: the next waits until 10 ms
    expect(starts).toEqual([0]);
    await vi.advanceTimersByTimeAsync(6);
    group.request();
    expect(starts).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([0, 10]); // three requests, one commit
    await finishNext();
    expect(starts).toHaveLength(2);
  });

  it('commits back to back with a zero interval', async () => {
    const { starts, commit, finishNext } = controlledCommits();
    const group = new GroupCommit({ commit, intervalMs: 0, onError: () => {}, now: Date.now });
    group.request();
    await vi.advanceTimersByTimeAsync(3);
    group.request();
    await finishNext();
    expect(starts).toEqual([0, 3]);
    await finishNext();
  });

  it('does not commit again when nothing became ready', async () => {
    const { starts, commit, finishNext } = controlledCommits();
    const group = new GroupCommit({ commit, intervalMs: 10, onError: () => {}, now: Date.now });
    group.request();
    await finishNext();
    await vi.advanceTimersByTimeAsync(100);
    expect(starts).toEqual([0]);
  });

  it('flush() commits what waits for the interval at once and resolves when everything is committed', async () => {
    const { starts, commit, finishNext } = controlledCommits();
    const group = new GroupCommit({ commit, intervalMs: 1000, onError: () => {}, now: Date.now });
    group.request();
    await finishNext();
    group.request(); // would wait until 1000 ms
    let flushed = false;
    const flushing = group.flush().then(() => {
      flushed = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([0, 0]);
    expect(flushed).toBe(false);
    await finishNext();
    await flushing;
    expect(flushed).toBe(true);
    await vi.advanceTimersByTimeAsync(2000);
    expect(starts).toHaveLength(2); // the cancelled wait never fires
  });

  it('pause() waits for the commit running and starts none until resume(), flush() included', async () => {
    const { starts, commit, finishNext } = controlledCommits();
    const group = new GroupCommit({ commit, intervalMs: 10, onError: () => {}, now: Date.now });
    group.request();
    expect(starts).toEqual([0]);
    let paused = false;
    const pausing = group.pause().then(() => (paused = true));
    group.request(); // ready while paused
    await vi.advanceTimersByTimeAsync(0);
    expect(paused).toBe(false);
    await finishNext();
    await pausing;
    await vi.advanceTimersByTimeAsync(1000);
    await group.flush();
    expect(starts).toEqual([0]);
    group.resume();
    expect(starts).toEqual([0, 1000]);
  });

  it('reports a failed commit and commits nothing after it, flush() included', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const group = new GroupCommit({
      commit: async () => {
        calls++;
        if (calls === 1) throw new Error('broker gone');
      },
      intervalMs: 0,
      onError: (err) => errors.push(err),
      now: Date.now,
    });
    group.request();
    group.request(); // ready while the first runs: would go into the next commit
    await vi.advanceTimersByTimeAsync(0);
    expect(errors).toEqual([new Error('broker gone')]);
    group.request();
    await group.flush();
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(1);
  });
});
