import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { StackError } from '../errors.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `fn` holding a cross-process lock (a directory, created atomically). A lock whose holder
 * died is taken over, so an interrupted install never blocks the next one.
 */
export async function withLock<T>(path: string, fn: () => Promise<T>, timeoutMs = 15 * 60_000): Promise<T> {
  mkdirSync(dirname(path), { recursive: true });
  const started = Date.now();
  for (;;) {
    try {
      mkdirSync(path);
      writeFileSync(join(path, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder = Number.NaN;
      try {
        holder = Number(readFileSync(join(path, 'pid'), 'utf8'));
      } catch {
        // The holder has created the directory but not yet written its pid.
      }
      if (Number.isInteger(holder) && !alive(holder)) {
        rmSync(path, { recursive: true, force: true });
        continue;
      }
      if (Date.now() - started > timeoutMs) throw new StackError(`timed out waiting for lock ${path}`);
      await delay(250);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(path, { recursive: true, force: true });
  }
}
