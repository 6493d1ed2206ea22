import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { stackEnv } from '../helpers/stack.ts';

const start = fileURLToPath(new URL('../../src/dev/start.ts', import.meta.url));

describe('npm start', () => {
  it('shows events flowing and a verification answer, then stops everything cleanly on SIGINT', async () => {
    // The run's broker and registry; the stack tests cover a stack that a process owns and takes down.
    const child = spawn(process.execPath, [start], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...stackEnv() },
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let out = '';
    // 'close', not 'exit': what it printed last has been read.
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const flowing = /events published: [1-9]\d*/.test(out);
        const answered = /last verification: .* -> COMPLETED (MTCH|CMTC|NMTC|NOAP)/.test(out);
        if (flowing && answered) resolve();
      });
      void exited.then((code) => reject(new Error(`npm start exited (${code}) early:\n${out}\n${err}`)));
    });
    expect(out).toContain('fraudlink replay --follow');
    expect(out).toMatch(/KAFKA_BROKERS=127\.0\.0\.1:\d+/);
    // It used the stack it was given, and so owns no JVM to take down.
    expect(out).toContain('stack: given by KAFKA_BROKERS and SCHEMA_REGISTRY_URL');
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(out).toContain('stopped.');
  });
});
