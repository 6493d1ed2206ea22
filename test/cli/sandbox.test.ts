import { once } from 'node:events';
import { createServer } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { main } from '../../src/cli/main.ts';

describe('fraudlink sandbox configuration', () => {
  it('refuses an unknown LOG_LEVEL with exit 2 naming it, as the other commands do (it crashed, exit 1)', async () => {
    const stderr = new PassThrough();
    let text = '';
    stderr.on('data', (d: Buffer) => {
      text += d.toString();
    });
    const code = await main(['node', 'fraudlink', 'sandbox', '--port', '0'], {
      env: { LOG_LEVEL: 'verbose' },
      stdout: new PassThrough(),
      stderr,
    });
    expect(code).toBe(2);
    expect(text).toBe(
      'fraudlink: CONFIG_INVALID: invalid configuration: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent\n',
    );
    expect(process.listenerCount('SIGTERM')).toBe(0);
  });

  // A listener left behind would end the process on any later signal, the next test's included.
  it('lets go of SIGTERM and SIGINT once it has stopped on one', async () => {
    const stdout = new PassThrough();
    const code = main(['node', 'fraudlink', 'sandbox', '--port', '0', '--alerts', '1'], {
      env: { LOG_LEVEL: 'silent' },
      stdout,
      stderr: new PassThrough(),
    });
    await once(stdout, 'data');
    process.emit('SIGTERM');
    expect(await code).toBe(0);
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual([0, 0]);
  });

  it('lets go of SIGTERM and SIGINT when its start-up fails (a port in use), so that no signal is swallowed until its exit', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    onTestFinished(() => void taken.close());
    await once(taken, 'listening');
    const { port } = taken.address() as { port: number };
    const stderr = new PassThrough();
    let text = '';
    stderr.on('data', (d: Buffer) => {
      text += d.toString();
    });
    const before = [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];
    const code = await main(['node', 'fraudlink', 'sandbox', '--port', String(port), '--alerts', '1'], {
      env: { LOG_LEVEL: 'silent' },
      stdout: new PassThrough(),
      stderr,
    });
    expect(code).toBe(2);
    expect(text).toMatch(new RegExp(`^fraudlink: USAGE: --port ${port}: address already in use`));
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual(before);
  });
});
