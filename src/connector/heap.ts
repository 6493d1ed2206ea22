import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a connector heap grow past what its last full collection kept, in percent.
 *
 * V8 grows an old generation to up to 4x its live data between full collections when the heap
 * limit is large (it is, on a machine or container with a few GB), 2x in practice here. The
 * connector's live data is bounded by design (the open transaction, three read-ahead pages,
 * ~20 MB per thread), so that headroom is garbage kept resident, on two threads. Measured at
 * 1,000,000 rows (`BENCH_ROWS=1000000 npm run bench -- connector`), peak RSS without a memory limit:
 * V8's own growth 299-312 MB; 30% 181-195 MB; 15% 186 and 196 MB, and 183-184 MB in a 512 MiB cgroup
 * (193-197 MB at 30%), at the same CPU per row (22.5-25 µs) and rate (1.13-1.19x the bare
 * producer). That costs little only because kafkajs's producer no longer promotes ~40 MB/s of
 * per-record garbage (kafka/kafkajs.ts): before those fixes, 20% cost 40-50% more CPU per row.
 */
export const CONNECTOR_HEAP_GROWING_PERCENT = 15;

/** The percent boundHeapGrowth set in this process, once it has. */
let inForce: number | undefined;

/**
 * Sets V8's heap growing factor for this process (the main thread and the page worker), unless node
 * was started with `--heap-growing-percent` of its own. Returns the percent in force, or undefined
 * when it was left to the command line. Process-wide: for the `connector` and `table` commands
 * only (the table: peak RSS 314 -> 200 MB holding 1,000,000 distinct IBANs, `npm run bench -- table`).
 *
 * The launcher (bin/fraudlink.js) calls it before it loads the CLI. V8 sets a heap's next full
 * collection at each full collection, and loading the CLI runs the first: bounded only from the
 * command's action, the main thread grew to ~58 MB before its second one, and that start-up burst
 * was the run's peak RSS in half the runs (`BENCH_ROWS=1000000 npm run bench -- connector`, four
 * pairs alternating: peak RSS 189, 185, 199, 191 MB bounded first against 210, 204, 200, 197 MB, at
 * the same CPU per row).
 */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv): number | undefined {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return undefined;
  if (inForce === undefined) setFlagsFromString(`--heap-growing-percent=${CONNECTOR_HEAP_GROWING_PERCENT}`);
  inForce = CONNECTOR_HEAP_GROWING_PERCENT;
  return inForce;
}

/** What boundHeapGrowth has set in this process: its percent, or undefined before it has. */
export function heapGrowthBound(): number | undefined {
  return inForce;
}
