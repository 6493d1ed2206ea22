import { InvalidArgumentError } from 'commander';
import { parseInstant } from '../instant.ts';

/** Commander argument parsers that name what was wrong. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`"${value}" is not an integer`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${n} is not between ${min} and ${max}`);
    return n;
  };
}

export function ratio(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || Number.isNaN(n) || n < 0 || n > 1)
    throw new InvalidArgumentError(`"${value}" is not a ratio from 0 to 1`);
  return n;
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** An ISO-8601 instant with its zone, normalised to UTC milliseconds (`…T09:30:00.000Z`). */
export function instant(value: string): string {
  const ms = parseInstant(value);
  if (ms === null)
    throw new InvalidArgumentError(
      `"${value}" is not a valid ISO-8601 instant with a zone, e.g. 2026-01-31T09:30:00Z`,
    );
  return new Date(ms).toISOString();
}

/** Resolves when SIGTERM or SIGINT arrives; the listeners are removed afterwards. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', on);
      process.off('SIGINT', on);
      resolve(signal);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

/**
 * Starts a component and runs it until SIGTERM/SIGINT (then stops it) or until it ends by itself; a
 * failure that ends it rejects, so the command exits with that failure's code. The signal handlers
 * are installed before start-up: a signal during a long start-up (a broker not yet reachable) was
 * lost, and as PID 1 in a container, where a signal without a handler is dropped, the process then
 * ran on until SIGKILL. Such a signal now stops the component as soon as it has started.
 */
export async function serveUntilSignal(
  start: () => Promise<{ done: Promise<void>; stop(): Promise<void> }>,
  logger: { info(msg: string): void },
  stopping: string,
): Promise<void> {
  let started = false;
  const signalled = untilSignal().then(() => {
    if (!started) logger.info('stop requested during start-up: stopping once started');
    return 'signal' as const;
  });
  const running = await start();
  started = true;
  const outcome = await Promise.race([signalled, running.done.then(() => 'done' as const)]);
  if (outcome === 'signal') {
    logger.info(stopping);
    await running.stop();
  }
  await running.done;
}
