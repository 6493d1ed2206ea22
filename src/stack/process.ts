import { type ChildProcess, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface Spawned {
  pid: number;
  child: ChildProcess;
}

/**
 * Starts a JVM in its own process group with output to a log file. When `ownerPid` is given, a
 * detached watchdog ends the JVM once the owner is gone, even if the owner was killed with SIGKILL
 * and never ran its cleanup.
 */
export function spawnJvm(java: string, args: string[], logFile: string, ownerPid?: number): Spawned {
  const out = openSync(logFile, 'a');
  const child = spawn(java, args, { detached: true, stdio: ['ignore', out, out] });
  if (child.pid === undefined) throw new Error(`could not start ${java}`);
  child.unref();
  if (ownerPid !== undefined) startWatchdog(ownerPid, child.pid);
  return { pid: child.pid, child };
}

function startWatchdog(ownerPid: number, pid: number): void {
  const script = `while kill -0 ${ownerPid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 1; done
kill -TERM ${pid} 2>/dev/null
for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 ${pid} 2>/dev/null || exit 0; sleep 1; done
kill -KILL ${pid} 2>/dev/null`;
  const watchdog = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  watchdog.unref();
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopProcess(pid: number, graceMs = 10_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await delay(100);
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      return;
    }
    while (isAlive(pid)) await delay(50);
  }
}
