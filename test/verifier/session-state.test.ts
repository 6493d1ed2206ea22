import { describe, expect, it } from 'vitest';
import { SessionLifecycle } from '../../src/verifier/session-state.ts';

/** What a reader of the session sees: its state's name and what the session reports. */
function seen(session: SessionLifecycle) {
  const { handsOut, joined, rejoining, leaving, hasFailed, member, joinedAt } = session;
  return { state: session.state.name, handsOut, joined, rejoining, leaving, hasFailed, member, joinedAt };
}

const JOINING = {
  state: 'joining',
  handsOut: true,
  joined: false,
  rejoining: false,
  leaving: false,
  hasFailed: false,
  member: undefined,
  joinedAt: undefined,
};

/** What the session shows once joined as `member`, having first joined at `joinedAt`. */
const joinedAs = (member: string, joinedAt: number) => ({
  ...JOINING,
  state: 'joined',
  joined: true,
  member,
  joinedAt,
});

describe('SessionLifecycle', () => {
  it('is joined as the member of its assignment, and rejoins after a crash keeping the time it first joined', () => {
    const session = new SessionLifecycle();
    expect(seen(session)).toEqual(JOINING);
    session.assigned('member-1', 5);
    expect(seen(session)).toEqual(joinedAs('member-1', 5));
    session.consumerRestarting();
    expect(seen(session)).toEqual({ ...JOINING, state: 'rejoining', rejoining: true, joinedAt: 5 });
    session.assigned('member-2', 9);
    expect(seen(session)).toEqual(joinedAs('member-2', 5));
  });

  it('forgets the member its requests were consumed as when they are dropped, and stays joined', () => {
    const session = new SessionLifecycle();
    session.assigned('member-1', 5);
    session.droppedInHand();
    expect(seen(session)).toMatchObject({ state: 'joined', joined: true, member: undefined });
  });

  it('hands out nothing once stopped: a later assignment or crash changes the member, never the state', () => {
    const session = new SessionLifecycle();
    session.assigned('member-1', 5);
    session.stop();
    const stopping = { ...JOINING, state: 'stopping', handsOut: false, member: 'member-1', joinedAt: 5 };
    expect(seen(session)).toEqual(stopping);
    session.consumerRestarting();
    expect(seen(session)).toEqual({ ...stopping, member: undefined });
    session.assigned('member-2', 9);
    expect(seen(session)).toEqual({ ...stopping, member: 'member-2' });
  });

  it('takes the first failure only, also after a stop, and a stop after a failure leaves it failed', () => {
    const session = new SessionLifecycle();
    session.assigned('member-1', 5);
    expect(session.fail()).toBe(true);
    expect(seen(session)).toMatchObject({ state: 'failed', handsOut: false, joined: false, hasFailed: true });
    expect(session.fail()).toBe(false);
    session.stop();
    expect(seen(session)).toMatchObject({ state: 'failed', hasFailed: true });

    const stopped = new SessionLifecycle();
    stopped.stop();
    expect(stopped.hasFailed).toBe(false);
    expect(stopped.fail()).toBe(true);
    expect(stopped.hasFailed).toBe(true);
  });

  it('closes its clients once, whether stop() or a failure asks first', async () => {
    const session = new SessionLifecycle();
    session.stop();
    let closes = 0;
    const closing = Promise.withResolvers<void>();
    const close = () => {
      closes++;
      return closing.promise;
    };
    const first = session.leave(close);
    expect(seen(session)).toMatchObject({ state: 'leaving', leaving: true, handsOut: false });
    expect(session.leave(close)).toBe(first);
    expect(closes).toBe(1);
    closing.resolve();
    await expect(first).resolves.toBeUndefined();
  });

  it('stays leaving when a failure comes while its clients close, and counts that failure', () => {
    const session = new SessionLifecycle();
    session.stop();
    void session.leave(async () => {});
    expect(session.hasFailed).toBe(false);
    expect(session.fail()).toBe(true);
    expect(seen(session)).toMatchObject({ state: 'leaving', leaving: true, hasFailed: true });
    expect(session.fail()).toBe(false);
  });

  it('keeps its failure once it leaves after failing', () => {
    const session = new SessionLifecycle();
    session.fail();
    void session.leave(async () => {});
    expect(session.state).toMatchObject({ name: 'leaving', failed: true });
    expect(session.hasFailed).toBe(true);
  });
});
