import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a connector heap grow past what its last full collection kept, in percent.
 *
 * V8 grows an old generation to up to 4x its live data between full collections when the heap
 * limit is large (it is, on a machine or container with a few GB), 2x in practice here. The
 * connector's live data is bounded by design (the open transaction, three read-ahead pages,
 * ~25 MB per thread), so that headroom is garbage kept resident, on two threads. 30% keeps it near
 * the live data. Measured at 1,000,000 rows (`npm run bench -- connector`, no memory limit): peak
 * RSS 299-312 MB -> 180 MB, throughput still 1.36x the bare kafkajs producer, CPU per row 19 -> 25 µs.
 * 15% saved nothing more and cost throughput; 50% kept 200 MB.
 */
export const CONNECTOR_HEAP_GROWING_PERCENT = 30;

/**
 * Sets V8's heap growing factor for this process (the main thread and the page worker), unless node
 * was started with `--heap-growing-percent` of its own. Returns the percent in force, or undefined
 * when it was left to the command line. Process-wide: for the `connector` command only.
 */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv): number | undefined {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return undefined;
  setFlagsFromString(`--heap-growing-percent=${CONNECTOR_HEAP_GROWING_PERCENT}`);
  return CONNECTOR_HEAP_GROWING_PERCENT;
}
