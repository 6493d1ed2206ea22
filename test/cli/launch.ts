import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

// bin/fraudlink.js as the image runs it: as PID 1, in a new pid namespace where `unshare` may create
// one (a root or user-namespace-enabled machine). The kernel drops a signal that PID 1 has no handler
// for, as in a container without an init. Elsewhere the launcher runs as an ordinary child, where a
// signal without a handler kills the process instead of ending it with an exit code.
const launcher = fileURLToPath(new URL('../../bin/fraudlink.js', import.meta.url));
const hooks = fileURLToPath(new URL('./fixtures/launcher-hooks.ts', import.meta.url));
const UNSHARE = ['unshare', '--pid', '--fork', '--map-root-user', '--kill-child', '--'];
export const asPid1 = spawnSync(UNSHARE[0] as string, [...UNSHARE.slice(1), 'true']).status === 0;

/** Runs the launcher with fraudlink's dist/ imports served from src/ (fixtures/launcher-hooks.ts). */
export function launch(args: string[], env: Record<string, string> = {}) {
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
