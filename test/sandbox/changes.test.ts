import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSandbox } from '../../src/sandbox/index.ts';
import { epochOf, walk } from './helpers.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('change stream', () => {
  it('applies --changes-per-sec changes in ticks whose changes share one millisecond', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let now = Date.parse('2026-11-22T09:30:00.000Z');
    const sandbox = createSandbox({ port: 0, alerts: 20, changesPerSec: 6, rateLimit: 0, now: () => now });
    await sandbox.start();
    try {
      const before = (await walk(sandbox)).rows.length;
      now += 500;
      vi.advanceTimersByTime(500);
      now += 500;
      vi.advanceTimersByTime(500);
      const { rows } = await walk(sandbox, 'sandbox-key', {
        updatedAfter: new Date(now - 1001).toISOString(),
      });
      const ticks = new Map<number, number>();
      for (const r of rows) ticks.set(epochOf(r.updatedAt), (ticks.get(epochOf(r.updatedAt)) ?? 0) + 1);
      // Six changes in two ticks of three; one alert may have changed twice (then shown once).
      expect([...ticks.keys()]).toEqual([now - 500, now]);
      expect([...ticks.values()].every((n) => n >= 2 && n <= 3)).toBe(true);
      expect(before).toBe(20);
    } finally {
      await sandbox.stop();
    }
  });

  it('stops changing once stopped', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const sandbox = createSandbox({ port: 0, alerts: 20, changesPerSec: 100 });
    await sandbox.start();
    await sandbox.stop();
    const rows = sandbox.currentRows();
    vi.advanceTimersByTime(5000);
    expect(sandbox.currentRows()).toEqual(rows);
  });
});
