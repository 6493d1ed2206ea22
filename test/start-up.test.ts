import { describe, expect, it } from 'vitest';
import { AbortedError } from '../src/errors.ts';
import { startUp } from '../src/start-up.ts';

describe('startUp', () => {
  it('ends a step that never settles as soon as the signal aborts, having released what was created, latest first', async () => {
    const stop = new AbortController();
    const released: string[] = [];
    const release = async (what: string) => {
      released.push(what);
    };
    const joining = Promise.withResolvers<void>();
    const starting = startUp(stop.signal, async ({ step, created }) => {
      created('admin client', release);
      created('ops server', release);
      joining.resolve();
      await step('joining the group', new Promise<never>(() => {}));
      return 'started';
    });
    await joining.promise;
    const reason = new AbortedError('SIGTERM during start-up');
    stop.abort(reason);
    const err = await starting.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortedError);
    expect((err as Error).message).toBe('joining the group aborted');
    expect((err as Error).cause).toBe(reason);
    expect(released).toEqual(['ops server', 'admin client']);
  });

  it('rejects with a failed step, not with a release that fails as well, having tried every release', async () => {
    const failure = new Error('topic config mismatch');
    const released: string[] = [];
    const starting = startUp(undefined, async ({ step, created }) => {
      created('admin client', async (what) => {
        released.push(what);
      });
      created('api client', async () => {
        throw new Error('already closed');
      });
      await step('provisioning the topics', Promise.reject(failure));
    });
    await expect(starting).rejects.toBe(failure);
    expect(released).toEqual(['admin client']);
  });

  it('releases nothing of a start-up that finished', async () => {
    const released: string[] = [];
    const started = await startUp(new AbortController().signal, async ({ step, created }) => {
      const admin = created('admin client', async (what) => {
        released.push(what);
      });
      return step('provisioning the topics', Promise.resolve(admin));
    });
    expect(started).toBe('admin client');
    expect(released).toEqual([]);
  });
});
