import { PassThrough } from 'node:stream';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { AbortedError } from '../../src/errors.ts';
import type { LoggerSetup } from '../../src/logger.ts';
import type { ReplayOptions } from '../../src/replay/index.ts';

// The command's wiring (signals, terminal, exit code, logs) on a stand-in for the read itself, which
// test/replay/replay.int.test.ts runs against a real broker.
const reading = vi.hoisted(() => ({ started: Promise.withResolvers<void>() }));
vi.mock('../../src/replay/index.ts', () => ({
  /**
   * Reads until aborted, as a snapshot read of a large topic would; reports progress once. Aborted,
   * it rejects, or with `follow` resolves with the table so far, as replayAlerts does.
   */
  replayAlerts: (_config: unknown, options: ReplayOptions) =>
    new Promise((resolve, reject) => {
      options.onProgress?.({ read: 1n, total: 10n });
      options.signal?.addEventListener('abort', () => {
        if (options.follow) resolve({ alerts: new Map(), events: 0, skipped: 0, uncertain: new Set() });
        else reject(new AbortedError('reading aborted'));
      });
      reading.started.resolve();
    }),
}));
/** The command's log lines, parsed. */
const logs = vi.hoisted(() => ({ lines: [] as Record<string, unknown>[] }));
vi.mock('../../src/logger.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/logger.ts')>();
  const { logCapture } = await import('../helpers/log.ts');
  return {
    ...actual,
    createLogger: (setup: LoggerSetup = {}) => {
      const capture = logCapture();
      logs.lines = capture.lines;
      return actual.createLogger({ ...setup, destination: capture.stream });
    },
  };
});

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
  beforeEach(() => {
    reading.started = Promise.withResolvers<void>();
  });

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

  // It said nothing: an empty output, exit 0, read as a topic without an active alert; and with
  // --follow it logged "replay done".
  it.each([
    ['a snapshot read', []],
    ['--follow before the snapshot', ['--follow']],
  ])(
    'warns that %s stopped by SIGTERM before the end printed no table, naming how far it got',
    async (_what, flags) => {
      const stdout = capture(false);
      const running = main(['node', 'fraudlink', 'replay', ...flags], {
        env: {
          KAFKA_BROKERS: 'localhost:9092',
          SCHEMA_REGISTRY_URL: 'http://localhost:8081',
          LOG_LEVEL: 'info',
        },
        stdout: stdout.stream,
        stderr: capture(false).stream as never,
      });
      await reading.started.promise;
      process.emit('SIGTERM');
      expect(await running).toBe(0);
      expect(stdout.text()).toBe('');
      expect(logs.lines.map((l) => l.msg)).not.toContain('replay done');
      expect(logs.lines).toContainEqual(
        expect.objectContaining({
          level: 'warn',
          signal: 'SIGTERM',
          topic: 'fraud.alerts.v1',
          offsetsRead: 1,
          offsetsTotal: 10,
          msg: 'stopped by SIGTERM before the end of the topic: the alert table was not printed',
        }),
      );
    },
  );
});
