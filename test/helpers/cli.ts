import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, onTestFailed, onTestFinished } from 'vitest';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<number | string>;
  stdout(): string;
  stderr(): string;
  /** Resolves once a stderr log line satisfies `predicate`. */
  logLine(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
}

/** Runs `fraudlink <args>` as a real child process on the same Node as the tests. */
export function runCli(args: string[], env: Record<string, string>): CliProcess {
  const child = spawn(process.execPath, [main, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters = new Set<(line: Record<string, unknown>) => void>();
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  let partial = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
    partial += d.toString();
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const text of lines) {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        line = { msg: text };
      }
      for (const w of waiters) w(line);
    }
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1));
  });
  // A failed test shows what the process said: often the only clue to a failure seen once in CI.
  onTestFailed(() => {
    process.stderr.write(
      `--- stderr of fraudlink ${args.join(' ')} (last 8000 chars) ---\n${err.slice(-8000)}\n`,
    );
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    child,
    exited,
    stdout: () => out,
    stderr: () => err,
    logLine(predicate, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching log line after ${timeoutMs} ms; stderr: ${err.slice(-2000)}`));
        }, timeoutMs);
        const check = (line: Record<string, unknown>) => {
          if (predicate(line)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(line);
          }
        };
        waiters.add(check);
        void exited.then((code) => {
          if (waiters.has(check)) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`process exited (${code}) before the log line; stderr: ${err.slice(-2000)}`));
          }
        });
      });
    },
  };
}

/**
 * A SIGTERM during its start-up ended the process's start-up at once: exit 0, the start-up ended by
 * the stop request rather than left behind after START_ABORT_GRACE_MS.
 */
export async function expectStartUpStopped(cli: CliProcess): Promise<void> {
  expect(await cli.exited).toBe(0);
  expect(cli.stderr()).toContain('"msg":"start-up ended by the stop request"');
  expect(cli.stderr()).not.toContain('start-up did not end after the stop request');
}

/** Sends each process SIGTERM in turn and expects it to stop cleanly: exit code 0. */
export async function expectCleanStop(...clis: CliProcess[]): Promise<void> {
  for (const cli of clis) {
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  }
}
