// Child processes for the dev scripts: start one, wait for a line it prints, stop it and read its exit.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Child {
  process: ChildProcess;
  /** The last lines of its stderr, for error messages. */
  tail(): string;
  /** Resolves with the first line on `stream` that `match` accepts; rejects if the child ends first or on timeout. */
  waitForLine(
    stream: 'stdout' | 'stderr',
    match: (line: string) => boolean,
    timeoutMs: number,
  ): Promise<string>;
  /** Sends `signal` and resolves with the exit code (null when killed by a signal). */
  stop(signal: NodeJS.Signals, timeoutMs: number): Promise<number | null>;
  exited: Promise<number | null>;
}

export function startChild(name: string, command: string, args: string[], env: NodeJS.ProcessEnv): Child {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<'stdout' | 'stderr', string[]> = { stdout: [], stderr: [] };
  const waiters = new Set<() => void>();
  for (const stream of ['stdout', 'stderr'] as const) {
    createInterface({ input: child[stream] }).on('line', (line) => {
      lines[stream].push(line); // kept whole: these children live for seconds, not days
      for (const wake of waiters) wake();
    });
  }
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const tail = () => lines.stderr.slice(-20).join('\n');
  let exitCode: number | null | undefined;
  exited.then((code) => {
    exitCode = code;
    for (const wake of waiters) wake();
  });

  return {
    process: child,
    tail,
    exited,
    waitForLine(stream, match, timeoutMs) {
      return new Promise((resolve, reject) => {
        let seen = 0;
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${name}: no such line on ${stream} within ${timeoutMs} ms; stderr:\n${tail()}`));
        }, timeoutMs);
        const check = () => {
          for (; seen < lines[stream].length; seen++) {
            const line = lines[stream][seen] as string;
            if (match(line)) {
              done();
              resolve(line);
              return;
            }
          }
          if (exitCode !== undefined) {
            done();
            reject(
              new Error(`${name} exited (code ${exitCode}) before the awaited line; stderr:\n${tail()}`),
            );
          }
        };
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop(signal, timeoutMs) {
      if (exitCode === undefined) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** A pino JSON log line carrying `msg`, parsed; undefined for any other line. */
export function logLine(line: string, msg: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as Record<string, unknown>;
    return parsed.msg === msg ? parsed : undefined;
  } catch {
    return undefined;
  }
}
