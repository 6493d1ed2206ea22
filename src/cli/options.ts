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
 * Runs a started component until SIGTERM/SIGINT (then stops it) or until it ends by itself; a
 * failure that ends it rejects, so the command exits with that failure's code.
 */
export async function serveUntilSignal(
  running: { done: Promise<void>; stop(): Promise<void> },
  logger: { info(msg: string): void },
  stopping: string,
): Promise<void> {
  const outcome = await Promise.race([
    untilSignal().then(() => 'signal' as const),
    running.done.then(() => 'done' as const),
  ]);
  if (outcome === 'signal') {
    logger.info(stopping);
    await running.stop();
  }
  await running.done;
}
