import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
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
});
