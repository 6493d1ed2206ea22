import { PassThrough, Writable } from 'node:stream';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { AbortedError } from '../../src/errors.ts';
import type { LoggerSetup } from '../../src/logger.ts';
import type { AlertState, ReplayOptions } from '../../src/replay/index.ts';

// The command's wiring (signals, terminal, exit code, logs) on a stand-in for the read itself, which
// test/replay/replay.int.test.ts runs against a real broker.
const reading = vi.hoisted(() => ({
  started: Promise.withResolvers<void>(),
  /** The table at the end of the topic; unset, the read never gets there. */
  snapshot: undefined as Map<string, AlertState> | undefined,
}));
vi.mock('../../src/replay/index.ts', () => ({
  /**
   * Reports progress once, then reads until aborted, as a snapshot read of a large topic would, or
   * takes `reading.snapshot`: resolves with it, or with `follow` applies one change (awaiting its
   * output, as replayAlerts does) and follows until aborted. Aborted, it rejects, or with `follow`
   * resolves with the table so far, as replayAlerts does.
   */
  replayAlerts: async (_config: unknown, options: ReplayOptions) => {
    options.onProgress?.({ read: 1n, total: 10n });
    const alerts = reading.snapshot ?? new Map();
    const result = { alerts, events: alerts.size, deactivated: 0, skipped: 0, uncertain: new Set() };
    if (reading.snapshot) {
      options.onSnapshot?.(alerts, { events: alerts.size, deactivated: 0, skipped: 0, uncertain: 0 });
      if (!options.follow) {
        reading.started.resolve();
        return result;
      }
      const [iban, alert] = [...alerts][0] as [string, AlertState];
      await options.onChange?.({ type: 'AlertUpserted', iban, alert, partition: 0, offset: '10' });
    }
    reading.started.resolve();
    return new Promise((resolve, reject) => {
      options.signal?.addEventListener('abort', () => {
        if (options.follow) resolve(result);
        else reject(new AbortedError('reading aborted'));
      });
    });
  },
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

/** A table of `n` alerts. */
function table(n: number): Map<string, AlertState> {
  const alerts = new Map<string, AlertState>();
  for (let i = 0; i < n; i++) {
    const iban = `DE${String(i).padStart(20, '0')}`;
    alerts.set(iban, {
      eventId: `e${i}`,
      alertId: `a${i}`,
      iban,
      bic: null,
      qualification: 'CONFIRMED',
      qualificationRaw: null,
      reportsCount: 1,
      updatedAt: 0,
      observedAt: 0,
    });
  }
  return alerts;
}

const env = {
  KAFKA_BROKERS: 'localhost:9092',
  SCHEMA_REGISTRY_URL: 'http://localhost:8081',
  LOG_LEVEL: 'info',
};

/** `fraudlink replay <flags>` in this process, printing to `stdout`; resolves with its exit code. */
function replay(flags: string[], stdout: NodeJS.WritableStream) {
  return main(['node', 'fraudlink', 'replay', ...flags], {
    env,
    stdout,
    stderr: capture(false).stream as never,
  });
}

/** Replay said that SIGTERM cut it short, with `fields`, and not that it was done. */
function expectCutShort(fields: Record<string, unknown>) {
  expect(logs.lines.map((l) => l.msg)).not.toContain('replay done');
  expect(logs.lines).toContainEqual(expect.objectContaining({ level: 'warn', signal: 'SIGTERM', ...fields }));
}

describe('fraudlink replay on a signal', () => {
  beforeEach(() => {
    reading.started = Promise.withResolvers<void>();
    reading.snapshot = undefined;
  });

  it('stops a snapshot read on SIGINT with exit 130, nothing printed, and the terminal cursor shown again', async () => {
    const stdout = capture(false);
    const stderr = capture(true);
    const running = main(['node', 'fraudlink', 'replay'], {
      env: { ...env, LOG_LEVEL: 'warn' },
      stdout: stdout.stream,
      stderr: stderr.stream as never,
    });
    await reading.started.promise;
    expect(stderr.text()).toContain('\u001b[?25l'); // the progress bar hid the cursor
    process.emit('SIGINT');
    expect(await running).toBe(130);
    expect(stdout.text()).toBe('');
    expect(stderr.text()).toContain('\u001b[?25h');
    expect(process.listenerCount('SIGINT')).toBe(0);
  });

  // An empty output with exit 0 read as a topic without an active alert, to a script or a Job; and
  // with --follow it logged "replay done".
  it.each([
    ['a snapshot read', []],
    ['--follow before the snapshot', ['--follow']],
  ])(
    'exits 143 when %s is stopped by SIGTERM before the end, warning that no table was printed and how far it got',
    async (_what, flags) => {
      const stdout = capture(false);
      const running = replay(flags, stdout.stream);
      await reading.started.promise;
      process.emit('SIGTERM');
      expect(await running).toBe(143);
      expect(stdout.text()).toBe('');
      expectCutShort({
        topic: 'fraud.alerts.v1',
        offsetsRead: 1,
        offsetsTotal: 10,
        msg: 'stopped by SIGTERM: the end of the topic was not reached and the alert table was not printed',
      });
    },
  );

  // It printed the whole table on regardless (a reader that takes nothing held it for good), then
  // exit 0; stopped, a part of the table read as the whole.
  it('stops printing the table on SIGTERM, also while waiting for a slow reader, and exits 143 saying it is partial', async () => {
    reading.snapshot = table(5);
    const lines: string[] = [];
    const firstLine = Promise.withResolvers<() => void>();
    // Takes the first line and holds it: the command then waits for the output to drain.
    const stdout = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        firstLine.resolve(done);
      },
    });
    const running = replay([], stdout);
    const release = await firstLine.promise;
    process.emit('SIGTERM');
    // Before the reader takes the line it holds.
    expect(await running).toBe(143);
    release();
    expect(lines).toHaveLength(1);
    expectCutShort({ msg: 'stopped by SIGTERM: the alert table was printed in part' });
    expect(process.listenerCount('SIGTERM')).toBe(0);
  });

  it('stops --follow on SIGTERM with exit 0 once the table is printed', async () => {
    reading.snapshot = table(2);
    const stdout = capture(false);
    const running = replay(['--follow'], stdout.stream);
    await reading.started.promise;
    process.emit('SIGTERM');
    expect(await running).toBe(0);
    // The table, then the change.
    expect(stdout.text().trim().split('\n')).toHaveLength(3);
    expect(logs.lines.map((l) => l.msg)).toContain('replay done');
  });
});
