import { PassThrough } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { AbortedError } from '../../src/errors.ts';
import type { ReplayOptions } from '../../src/replay/index.ts';

// The command's wiring (signals, terminal, exit code) on a stand-in for the read itself, which
// test/replay/replay.int.test.ts runs against a real broker.
const reading = vi.hoisted(() => ({ started: Promise.withResolvers<void>() }));
vi.mock('../../src/replay/index.ts', () => ({
  /** Reads until aborted, as a snapshot read of a large topic would; reports progress once. */
  replayAlerts: (_config: unknown, options: ReplayOptions) =>
    new Promise((_resolve, reject) => {
      options.onProgress?.({ read: 1n, total: 10n });
      options.signal?.addEventListener('abort', () => reject(new AbortedError('reading aborted')));
      reading.started.resolve();
    }),
}));

/** A stream that keeps what is written to it, a terminal when `tty` says so. */
function capture(tty: boolean) {
  const stream = Object.assign(new PassThrough(), { isTTY: tty, columns: 80 });
  let text = '';
  stream.on('data', (d: Buffer) => {
    text += d.toString();
  });
  return { stream, text: () => text };
}

describe('fraudlink replay on a signal', () => {
  it('stops a snapshot read on SIGINT with exit 0, nothing printed, and the terminal cursor shown again', async () => {
    const stdout = capture(false);
    const stderr = capture(true);
    const env = {
      KAFKA_BROKERS: 'localhost:9092',
      SCHEMA_REGISTRY_URL: 'http://localhost:8081',
      LOG_LEVEL: 'warn',
    };
    const running = main(['node', 'fraudlink', 'replay'], {
      env,
      stdout: stdout.stream,
      stderr: stderr.stream as never,
    });
    await reading.started.promise;
    expect(stderr.text()).toContain('\u001b[?25l'); // the progress bar hid the cursor
    process.emit('SIGINT');
    expect(await running).toBe(0);
    expect(stdout.text()).toBe('');
    expect(stderr.text()).toContain('\u001b[?25h');
    expect(process.listenerCount('SIGINT')).toBe(0);
  });
});
