import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../src/retry.ts';
import type { SessionView } from '../../src/verifier/session-state.ts';
import {
  LIVENESS_MS,
  RestartBackoff,
  SESSION_HEALTHY_AFTER_MS,
  VerifierLifecycle,
} from '../../src/verifier/verifier-state.ts';

const JOINING: SessionView = { joined: false, rejoining: false, joinedAt: undefined };
const JOINED: SessionView = { joined: true, rejoining: false, joinedAt: 1 };
const REJOINING: SessionView = { joined: false, rejoining: true, joinedAt: 1 };
/** Joined once, and its consumer has its assignment under way again after a rebalance. */
const REBALANCING: SessionView = { joined: false, rejoining: false, joinedAt: 1 };

/** 1 s doubling to 8 s, without jitter. */
const POLICY: RetryPolicy = {
  retries: Number.POSITIVE_INFINITY,
  initialDelayMs: 1000,
  maxDelayMs: 8000,
  factor: 2,
  jitter: 0,
};

describe('VerifierLifecycle readiness', () => {
  it('is ready once the first session joined, and says it joins before', () => {
    const verifier = new VerifierLifecycle(() => 0);
    expect(verifier.ready(undefined)).toEqual({ ready: false, reason: 'joining group' });
    expect(verifier.ready(JOINING)).toEqual({ ready: false, reason: 'joining group' });
    verifier.started();
    expect(verifier.ready(JOINING)).toEqual({ ready: false, reason: 'joining group' });
    expect(verifier.ready(JOINED)).toEqual({ ready: true });
    expect(verifier.ready(REJOINING)).toEqual({ ready: false, reason: 'kafka session restarting' });
    expect(verifier.ready(REBALANCING)).toEqual({ ready: false, reason: 'joining group' });
  });

  it('is not ready while a failed session is replaced, nor until the new one first joins', () => {
    const verifier = new VerifierLifecycle(() => 0);
    verifier.started();
    verifier.sessionFailed();
    expect(verifier.phase).toEqual({ name: 'restarting', waiting: true });
    expect(verifier.ready(JOINED)).toEqual({ ready: false, reason: 'kafka session restarting' });
    verifier.backoffOver();
    expect(verifier.phase).toEqual({ name: 'restarting', waiting: false });
    expect(verifier.ready(JOINED)).toEqual({ ready: false, reason: 'kafka session restarting' });
    verifier.restarted();
    expect(verifier.phase).toEqual({ name: 'running', afterRestart: true });
    expect(verifier.ready(JOINING)).toEqual({ ready: false, reason: 'kafka session restarting' });
    expect(verifier.ready(JOINED)).toEqual({ ready: true });
    expect(verifier.ready(REBALANCING)).toEqual({ ready: false, reason: 'joining group' });
  });

  it('says stopping once stop() began or a platform failure ended it, and a restart does not undo that', () => {
    const stopped = new VerifierLifecycle(() => 0);
    stopped.started();
    stopped.sessionFailed();
    stopped.stopping();
    stopped.backoffOver();
    stopped.restarted();
    stopped.sessionFailed();
    expect(stopped.phase).toEqual({ name: 'stopping' });
    expect(stopped.ready(JOINED)).toEqual({ ready: false, reason: 'stopping' });

    const failed = new VerifierLifecycle(() => 0);
    failed.started();
    failed.failed();
    expect(failed.ready(JOINED)).toEqual({ ready: false, reason: 'stopping' });
  });

  it('stays stopping when stop() came while start() opened the first session', () => {
    const verifier = new VerifierLifecycle(() => 0);
    verifier.stopping();
    verifier.started();
    expect(verifier.phase).toEqual({ name: 'stopping' });
    expect(verifier.ready(JOINED)).toEqual({ ready: false, reason: 'stopping' });
  });
});

describe('VerifierLifecycle liveness', () => {
  it('reports hung after LIVENESS_MS without a sign of life, alive again after one', () => {
    let clock = 0;
    const verifier = new VerifierLifecycle(() => clock);
    verifier.started();
    clock += LIVENESS_MS - 1;
    expect(verifier.healthy()).toBe(true);
    clock += 1;
    expect(verifier.healthy()).toBe(false);
    verifier.alive();
    expect(verifier.healthy()).toBe(true);
  });

  it('stays alive however long it waits out a restart backoff, and no longer once the next session opens', () => {
    let clock = 0;
    const verifier = new VerifierLifecycle(() => clock);
    verifier.started();
    verifier.sessionFailed();
    clock += 10 * LIVENESS_MS;
    expect(verifier.healthy()).toBe(true);
    verifier.backoffOver();
    expect(verifier.healthy()).toBe(false);
  });
});

describe('RestartBackoff', () => {
  it('waits longer after each failed session, up to the policy cap', () => {
    const backoff = new RestartBackoff(POLICY, () => 0);
    expect([1, 2, 3, 4, 5].map(() => backoff.nextDelay())).toEqual([1000, 2000, 4000, 8000, 8000]);
    expect(backoff.failures).toBe(5);
  });

  it('starts again from the shortest wait after a commit', () => {
    const backoff = new RestartBackoff(POLICY, () => 0);
    backoff.nextDelay();
    backoff.nextDelay();
    backoff.progressed();
    expect(backoff.failures).toBe(0);
    expect(backoff.nextDelay()).toBe(1000);
  });

  it('starts again from the shortest wait after a session that stayed joined long enough, not a shorter one', () => {
    let clock = 0;
    const backoff = new RestartBackoff(POLICY, () => clock);
    backoff.nextDelay();
    backoff.nextDelay();
    clock = SESSION_HEALTHY_AFTER_MS - 1;
    backoff.sessionEnded(0);
    backoff.sessionEnded(undefined);
    expect(backoff.failures).toBe(2);
    clock = SESSION_HEALTHY_AFTER_MS;
    backoff.sessionEnded(0);
    expect(backoff.failures).toBe(0);
  });
});
