import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { stackEnv } from '../helpers/stack.ts';

const start = fileURLToPath(new URL('../../src/dev/start.ts', import.meta.url));

describe('npm start', () => {
  it('shows events flowing, a verification answer and a table lookup, then stops everything cleanly on SIGINT', async () => {
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
        const lookedUp = /table lookup: GET \/v1\/alerts\/[A-Z]{2}\d{2}[A-Z0-9]+ -> 200 \{/.test(out);
        if (flowing && answered && lookedUp) resolve();
      });
      void exited.then((code) => reject(new Error(`npm start exited (${code}) early:\n${out}\n${err}`)));
    });
    expect(out).toContain('fraudlink replay --follow');
    // The lookup printed is the table's answer for that IBAN: an active alert, in the API's shape.
    const lookup = /table lookup: GET \/v1\/alerts\/(\S+) -> 200 (\{.*\})/.exec(out);
    const answer = JSON.parse(lookup?.[2] ?? '{}') as Record<string, unknown>;
    expect(answer).toMatchObject({
      iban: lookup?.[1],
      alertId: expect.any(String),
      qualification: expect.any(String),
    });
    // The page's address is printed, and the page is served there.
    const page = /alert table \(page for analysts\): (http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1];
    const served = await fetch(`${page}/`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/^text\/html/);
    expect(out).toMatch(/KAFKA_BROKERS=127\.0\.0\.1:\d+/);
    // It used the stack it was given, and so owns no JVM to take down.
    expect(out).toContain('stack: given by KAFKA_BROKERS and SCHEMA_REGISTRY_URL');
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(out).toContain('stopped.');
  });
});
