import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it, onTestFinished } from 'vitest';
import { stackEnv } from '../helpers/stack.ts';

const fixture = fileURLToPath(new URL('./fixtures/close-all.ts', import.meta.url));

it('leaves no timer or connection behind once every client is closed, so the process exits on its own', async () => {
  const child = spawn(process.execPath, [fixture, stackEnv().KAFKA_BROKERS], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  // 'close', not 'exit': the output is read to its end before it is parsed.
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect({ code, err }).toEqual({ code: 0, err: '' });
  expect(JSON.parse(out)).toEqual([]);
});
