import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/stack/services.ts';
import { findRunningStack, startStack } from '../src/stack/stack.ts';

export { freePort };

/** The developer's running stack, or one owned by this benchmark process. */
export async function benchStack(): Promise<{
  brokers: string;
  registryUrl: string;
  kafkaPid: number;
  stop(): Promise<void>;
}> {
  const running = await findRunningStack();
  if (running) return { ...running, stop: async () => {} };
  return startStack({ ownerPid: process.pid });
}

// The image runs the compiled CLI (dist/, through bin/fraudlink.js), not the TypeScript sources: Node's
// type stripping would load its own compiler into every isolate. bench/index.ts builds dist/ first.
const main = fileURLToPath(new URL('../bin/fraudlink.js', import.meta.url));

/** Compiles src/ into dist/ (the package build), so that children run the current code as the image does. */
export function buildDist(): void {
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  const project = fileURLToPath(new URL('../tsconfig.build.json', import.meta.url));
  execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });
}

/**
 * The node flags the Docker image's ENTRYPOINT runs fraudlink with (between the node binary and the
 * script): children run as the image runs them. BENCH_CHILD_NODE_OPTIONS adds to them.
 */
export const imageNodeFlags: string[] = (() => {
  const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1];
  if (!line) throw new Error('Dockerfile has no ENTRYPOINT in exec form');
  return (JSON.parse(line) as string[]).slice(1, -1);
})();

/** The runtime stage's `ENV` settings of the Dockerfile (KEY=VALUE): children get them as the image's processes do. */
export const imageEnv: Record<string, string> = (() => {
  const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  return Object.fromEntries(
    [...runtime.matchAll(/^ENV\s+(\w+)=(\S+)\s*$/gm)].map((m) => [m[1] as string, m[2] as string]),
  );
})();

/**
 * BENCH_CHILD_MEMORY_MB: the `cgroup.procs` file of a memory cgroup of that size (created once per
 * benchmark process, cgroup v1 or v2, needs root), so children run as under a container's memory
 * limit, which Node reads to size V8's heap (the Helm chart's connector limit is 512 MiB).
 */
const memoryCgroupProcs: string | undefined = (() => {
  const mb = Number(process.env.BENCH_CHILD_MEMORY_MB ?? 0);
  if (!(mb > 0)) return undefined;
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v1 = lines.find((l) => /^\d+:memory:/.test(l))?.split(':')[2];
  const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
  const name = `fraudlink-bench-${process.pid}`;
  const dir =
    v1 !== undefined ? join('/sys/fs/cgroup/memory', v1, name) : join('/sys/fs/cgroup', v2 ?? '/', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, v1 !== undefined ? 'memory.limit_in_bytes' : 'memory.max'),
    String(mb * 1024 * 1024),
  );
  process.once('exit', () => {
    try {
      rmdirSync(dir); // a cgroup goes with rmdir once its processes are gone
    } catch {}
  });
  return join(dir, 'cgroup.procs');
})();

export const childMemoryLimitMb = memoryCgroupProcs ? Number(process.env.BENCH_CHILD_MEMORY_MB) : undefined;

export function cli(args: string[], env: Record<string, string>): ChildProcess {
  const argv = [...imageNodeFlags, main, ...args];
  // The shell joins the cgroup, then becomes node (same pid): nothing of the benchmark runs in it.
  const [command, commandArgs] = memoryCgroupProcs
    ? ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', memoryCgroupProcs, process.execPath, ...argv]]
    : [process.execPath, argv];
  return spawn(command, commandArgs as string[], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LOG_LEVEL: 'warn',
      ...imageEnv,
      ...(process.env.BENCH_CHILD_NODE_OPTIONS && { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS }),
      // glibc allocator settings (MALLOC_ARENA_MAX...) of the benchmark's own environment override the image's.
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('MALLOC_'))),
      ...env,
    },
    stdio: ['ignore', process.env.BENCH_CHILD_STDOUT ? 'inherit' : 'ignore', 'inherit'],
  });
}

/** CPU time (user + system) a process has used so far, in ms; Linux /proc, clock ticks of 10 ms. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU ms used by each named process while `phase` runs. */
export async function cpuDuring<T>(
  pids: Record<string, number>,
  phase: () => Promise<T>,
): Promise<{ result: T; cpu: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  const result = await phase();
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid) - (before[k] ?? 0)]));
  return { result, cpu };
}

/** Peak resident set size of a process, from /proc (Linux). */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

export async function metric(url: string, name: string): Promise<number> {
  try {
    const text = await (await fetch(url)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith(name))
      .reduce((t, l) => t + Number(l.split(' ').at(-1)), 0);
  } catch {
    return 0;
  }
}

/** Polls (a benchmark may) until `check` holds or the time is up. */
export async function until(check: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await delay(everyMs);
  }
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

export const median = (xs: number[]): number =>
  percentile(
    xs.toSorted((a, b) => a - b),
    50,
  );

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/**
 * Runs one of the bare-client scripts (bench/bare-*.ts) in a process of its own, so that its kafkajs
 * is stock or fixed as asked (BARE_KAFKAJS_FIXES), and returns the JSON line it prints.
 */
export async function runBare<T>(script: string, env: Record<string, string>): Promise<T> {
  const child = spawn(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], {
    env: {
      PATH: process.env.PATH ?? '',
      ...env,
      // Stock kafkajs on Node 24 prints a TimeoutNegativeWarning (its 1 ms timer loop, which
      // fraudlink's kafkajs fix 10 removes); not a figure of any benchmark.
      NODE_NO_WARNINGS: '1',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${script} exited with code ${code}`);
  return JSON.parse(out) as T;
}
