import { PassThrough } from 'node:stream';
import { InvalidArgumentError } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { checkedBy, instant, serveUntilSignal } from '../../src/cli/options.ts';
import { AbortedError } from '../../src/errors.ts';

describe('instant option', () => {
  it('normalises an ISO-8601 instant with its zone to UTC milliseconds', () => {
    expect(instant('2026-01-01T02:00:00.123456+02:00')).toBe('2026-01-01T00:00:00.123Z');
    expect(instant('2026-01-01T00:00:00Z')).toBe('2026-01-01T00:00:00.000Z');
  });

  it.each([
    ['a bare number', '5'],
    ['a month and day', 'March 5'],
    ['a US date', '11/22/2026'],
    ['a local time without a zone', '2026-01-01T00:00:00'],
    ['a day February does not have', '2026-02-31T00:00:00Z'],
    ['hour 25', '2026-01-01T25:00:00Z'],
  ])('refuses %s', (_what, value) => {
    expect(() => instant(value)).toThrow(InvalidArgumentError);
    expect(() => instant(value)).toThrow(`"${value}" is not a valid ISO-8601 instant`);
  });
});

describe('checkedBy', () => {
  // A flag kept its spaces where its variable lost them: `--cursor-param ' cursor'` named a
  // parameter that the connector, given EXPORT_CURSOR_PARAM=' cursor', never sends.
  it('takes the value as the configuration takes its variable, trimmed', () => {
    expect(checkedBy('cursorParam')(' after ')).toBe('after');
    expect(checkedBy('apiKey')('\tk1 ')).toBe('k1');
  });

  it("refuses with the configuration's message", () => {
    expect(() => checkedBy('apiKey')('a b')).toThrow(
      new InvalidArgumentError('must be printable ASCII without spaces (it is an HTTP header value)'),
    );
  });
});

describe('string options', () => {
  // Each was taken as given and read as unset further on: the host name, stdout, every IBAN.
  it.each([
    ['verifier --instance-id', ['verifier', '--instance-id', '']],
    ['replay --out', ['replay', '--out', '']],
    ['api sent-search --iban', ['api', 'sent-search', '--iban', '']],
    ['api received-search --iban', ['api', 'received-search', '--iban', '  ']],
  ])(
    'refuses an empty %s with exit 2 naming the option, before reading the configuration',
    async (what, args) => {
      const stderr = new PassThrough();
      let text = '';
      stderr.on('data', (d: Buffer) => {
        text += d.toString();
      });
      const code = await main(['node', 'fraudlink', ...args], { env: {}, stdout: new PassThrough(), stderr });
      expect(code).toBe(2);
      expect(text).toContain(`option '${what.split(' ').at(-1)} <`);
      expect(text).toContain('must not be empty');
    },
  );
});

describe('serveUntilSignal', () => {
  const logger = { info: vi.fn(), warn: vi.fn() };
  afterEach(() => {
    vi.useRealTimers();
    expect(process.listenerCount('SIGTERM')).toBe(0);
    expect(process.listenerCount('SIGINT')).toBe(0);
  });

  /** A component whose done settles when stopped. */
  function component() {
    const done = Promise.withResolvers<void>();
    return { done: done.promise, stop: vi.fn(async () => done.resolve()) };
  }

  it('aborts start-up on SIGTERM and returns at once when start() honours the abort (it waited, then exit 1)', async () => {
    const starting = Promise.withResolvers<AbortSignal>();
    const serving = serveUntilSignal(
      (signal) => {
        starting.resolve(signal);
        return new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason)),
        );
      },
      logger,
      'stopping',
      600_000,
    );
    const signal = await starting.promise;
    process.emit('SIGTERM');
    await expect(serving).resolves.toBeUndefined();
    expect(signal.reason).toBeInstanceOf(AbortedError);
  });

  it('gives a start() that ignores the abort a bounded grace, then returns, and stops it if it starts later', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const starting = Promise.withResolvers<ReturnType<typeof component>>();
    let settled = false;
    const serving = serveUntilSignal(() => starting.promise, logger, 'stopping', 5000).finally(() => {
      settled = true;
    });
    process.emit('SIGTERM');
    await vi.advanceTimersByTimeAsync(4999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await serving;
    const late = component();
    starting.resolve(late);
    await late.done;
    expect(late.stop).toHaveBeenCalledOnce();
  });

  it('stops as usual a component whose start-up ends within the grace', async () => {
    const starting = Promise.withResolvers<ReturnType<typeof component>>();
    const serving = serveUntilSignal(() => starting.promise, logger, 'stopping', 600_000);
    process.emit('SIGINT');
    const running = component();
    starting.resolve(running);
    await serving;
    expect(running.stop).toHaveBeenCalledOnce();
  });

  it('rejects with a start-up failure no stop request caused', async () => {
    const failure = new Error('credentials refused');
    await expect(serveUntilSignal(() => Promise.reject(failure), logger, 'stopping')).rejects.toBe(failure);
  });
});
