import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { CONNECTOR_HEAP_GROWING_PERCENT } from '../../src/connector/heap.ts';

// bin/fraudlink.js as the image runs it: as PID 1, in a new pid namespace where `unshare` may create
// one (a root or user-namespace-enabled machine). The kernel drops a signal that PID 1 has no handler
// for, as in a container without an init. Elsewhere the launcher runs as an ordinary child, where a
// signal without a handler kills the process instead of ending it with an exit code.
const launcher = fileURLToPath(new URL('../../bin/fraudlink.js', import.meta.url));
const hooks = fileURLToPath(new URL('./fixtures/launcher-hooks.ts', import.meta.url));
const UNSHARE = ['unshare', '--pid', '--fork', '--map-root-user', '--kill-child', '--'];
const asPid1 = spawnSync(UNSHARE[0] as string, [...UNSHARE.slice(1), 'true']).status === 0;

/** Runs the launcher with fraudlink's dist/ imports served from src/ (fixtures/launcher-hooks.ts). */
function launch(args: string[], env: Record<string, string> = {}) {
  const node = [process.execPath, '--import', hooks, launcher, ...args];
  const [command, ...rest] = asPid1 ? [...UNSHARE, ...node] : node;
  const child = spawn(command as string, rest, {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const text of stderr.split('\n').slice(lines.length, -1)) {
      lines.push(text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text });
    }
    for (const wake of waiters) wake();
  });
  // 'close': the output is read to its end.
  const exited = once(child, 'close').then(([code, signal]) => code ?? signal);
  return {
    child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    /** The first stderr line with this msg. */
    line(msg: string): Promise<Record<string, unknown>> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = lines.find((l) => l.msg === msg);
          if (!line) return;
          waiters.delete(check);
          resolve(line);
        };
        waiters.add(check);
        check();
        void exited.then((code) => reject(new Error(`exited ${code} before "${msg}"; stderr: ${stderr}`)));
      });
    },
    /** The pid to signal: node's own, not unshare's. */
    nodePid(): number {
      if (!asPid1) return child.pid as number;
      const pid = child.pid as number;
      return Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0]);
    },
  };
}

describe(`bin/fraudlink.js (${asPid1 ? 'as PID 1 in a new pid namespace' : 'unshare unavailable: as a child'})`, {
  timeout: 30_000,
}, () => {
  it('ends with 143 on a SIGTERM that arrives while the CLI is still loading (it was dropped as PID 1)', async () => {
    const cli = launch(['--help']);
    const holding = await cli.line('holding the CLI');
    if (asPid1) expect(holding.pid).toBe(1);
    process.kill(cli.nodePid(), 'SIGTERM');
    // Lets the CLI load: a launcher without a handler by then would go on and print the help.
    cli.child.stdin.end();
    expect(await cli.exited).toBe(143);
    expect(cli.stdout()).toBe('');
  });

  it('hands SIGTERM over to the command once it runs: the sandbox stops cleanly with exit 0', async () => {
    const cli = launch(['sandbox', '--port', '0', '--alerts', '10']);
    cli.child.stdin.end();
    await cli.line('sandbox ready');
    process.kill(cli.nodePid(), 'SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(cli.stderr()).toContain('"signal":"SIGTERM","msg":"stopping"');
  });

  // As PID 1 the second signal was dropped (the command had let go of the first's listener), and the
  // stop ran its course: here START_ABORT_GRACE_MS, then exit 0. Outside PID 1 it killed the process.
  it('ends a graceful stop at once with 128 + the number of a second signal', async () => {
    const cli = launch(['connector'], {
      API_BASE_URL: 'http://127.0.0.1:1/api',
      API_KEY: 'k',
      KAFKA_BROKERS: '127.0.0.1:1',
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1',
      HTTP_PORT: '0',
    });
    cli.child.stdin.end();
    // Start-up retries the unreachable broker, the command's listener installed: a stop held open.
    await cli.line('Connection error: connect ECONNREFUSED 127.0.0.1:1');
    process.kill(cli.nodePid(), 'SIGTERM');
    await cli.line('stop requested during start-up: aborting it');
    process.kill(cli.nodePid(), 'SIGINT');
    expect(await cli.exited).toBe(130);
    expect(cli.stderr()).not.toContain('start-up did not end after the stop request');
  });

  it("bounds the connector's V8 heap growth before the CLI loads, and no other command's", async () => {
    const run = async (args: string[]) => {
      const cli = launch(args);
      const { heapGrowingPercent } = await cli.line('holding the CLI');
      cli.child.stdin.end();
      expect(await cli.exited).toBe(0);
      return heapGrowingPercent;
    };
    expect(await run(['connector', '--help'])).toBe(CONNECTOR_HEAP_GROWING_PERCENT);
    expect(await run(['sandbox', '--help'])).toBeUndefined();
  });
});
