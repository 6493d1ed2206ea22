import { InvalidArgumentError } from 'commander';
import { type LoggingConfig, warnOfClearText } from '../config/index.ts';
import { type SharedRule, takenBy } from '../config/schema.ts';
import { AbortedError } from '../errors.ts';
import { parseInstant } from '../instant.ts';
import { createLogger, type Logger } from '../logger.ts';
import type { CliContext } from './context.ts';
import { onStopSignal, signalExitCode } from './signals.ts';

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

/**
 * A string option's value checked by a rule of the configuration (src/config/schema.ts) and taken
 * as the configuration takes its variable, trimmed, so that a flag and its variable accept and
 * refuse alike: `--api-key ' k'` as API_KEY=' k' is the key `k`, which is what a client's header
 * carries (HTTP trims header values).
 */
export function checkedBy(rule: SharedRule) {
  return (value: string): string => {
    const taken = takenBy(rule, value);
    if ('problem' in taken) throw new InvalidArgumentError(taken.problem);
    return taken.value;
  };
}

const checkNonEmpty = checkedBy('nonEmpty');

/**
 * A string option's value, refused when empty or blank: commander takes `--host ''` as given, and
 * code that reads an empty string as "unset" would then quietly use its default (all interfaces,
 * stdout, plain HTTP). Otherwise kept as given.
 */
export function nonEmpty(value: string): string {
  checkNonEmpty(value);
  return value;
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

/**
 * Resolves when SIGTERM or SIGINT arrives; another one after it ends the process at once with 128 +
 * its number (onStopSignal). The listeners are removed when `cancel` aborts, which the command does
 * once it has ended (a promise not settled by then never settles). Takes the signals over from the
 * launcher's keeper.
 */
export function untilSignal(cancel: AbortSignal): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    cancel.addEventListener('abort', onStopSignal(resolve), { once: true });
  });
}

/**
 * For a command that runs to an end of its own: SIGTERM or SIGINT aborts `controller` (the reason an
 * AbortedError naming the signal) until `release()`; `received()` names the signal that did, and
 * stays undefined when something else (a closed stdout) had aborted it first.
 */
export function abortOnSignal(controller: AbortController): {
  received(): NodeJS.Signals | undefined;
  release(): void;
} {
  const released = new AbortController();
  let received: NodeJS.Signals | undefined;
  void untilSignal(released.signal).then((signal) => {
    if (controller.signal.aborted) return;
    received = signal;
    controller.abort(new AbortedError(`stopped by ${signal}`));
  });
  return { received: () => received, release: () => released.abort() };
}

/**
 * The rule for every one-shot command (connector status and reset, replay, api) that SIGTERM or
 * SIGINT cut short: it logs what did not happen and sets the exit code to 128 + the signal's number,
 * as a shell reports a process the signal ended, so that a script or a Kubernetes Job does not take
 * a partial or empty output for success. A service stopping on its signal (serveUntilSignal, the
 * sandbox, replay --follow once its table is printed) exits 0 instead.
 */
export function cutShort(
  ctx: CliContext,
  logger: Pick<Logger, 'warn'>,
  signal: NodeJS.Signals,
  undone: string,
  details: Record<string, unknown> = {},
): void {
  logger.warn({ signal, ...details }, `stopped by ${signal}: ${undone}`);
  ctx.exitCode = signalExitCode(signal);
}

/**
 * Runs a one-shot job that SIGTERM or SIGINT aborts through `controller`. Stopped so, it is cutShort
 * and resolves undefined; any other failure, an abort by something else included, rejects.
 */
export async function unlessSignalled<T>(
  ctx: CliContext,
  logger: Pick<Logger, 'warn'>,
  undone: string,
  job: (signal: AbortSignal) => Promise<T>,
  controller = new AbortController(),
): Promise<{ value: T } | undefined> {
  const signals = abortOnSignal(controller);
  try {
    return { value: await job(controller.signal) };
  } catch (err) {
    const signal = signals.received();
    if (signal === undefined || !(err instanceof AbortedError)) throw err;
    cutShort(ctx, logger, signal, undone);
    return undefined;
  } finally {
    signals.release();
  }
}

interface Running {
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * How long a stop requested during start-up waits for start() to end. startConnector and
 * startVerifier take the abort signal and end within the step under way, having released what they
 * created; this is the safety net for a step that would not (a release that hangs, a call not yet
 * raced against the signal), which would otherwise run on past the pod's 30 s grace. After it the
 * command returns without start-up, and the CLI's exit ends what it left behind. One that ends
 * meanwhile is stopped as usual.
 */
export const START_ABORT_GRACE_MS = 5000;

/**
 * Starts a component and runs it until SIGTERM/SIGINT (then stops it) or until it ends by itself; a
 * failure that ends it rejects, so the command exits with that failure's code. The signal handlers
 * are installed before start-up: as PID 1 in a container, where a signal without a handler is
 * dropped, a signal during a long start-up (a broker not yet reachable) was lost and the process ran
 * on until SIGKILL. Such a signal aborts `start`'s signal, which ends start-up at once, and the
 * command returns (exit 0) once start-up has ended, or at the latest after START_ABORT_GRACE_MS. A
 * second signal, during start-up's grace or the stop, ends the process at once with 128 + its
 * number (untilSignal).
 */
export async function serveUntilSignal(
  start: (signal: AbortSignal) => Promise<Running>,
  logger: Pick<Logger, 'info' | 'warn'>,
  stopping: string,
  startGraceMs = START_ABORT_GRACE_MS,
): Promise<void> {
  const startUp = new AbortController();
  const finished = new AbortController();
  let started = false;
  const signalled = untilSignal(finished.signal).then((signal) => {
    if (!started) {
      logger.info({ signal }, 'stop requested during start-up: aborting it');
      startUp.abort(new AbortedError(`${signal} during start-up`));
    }
    return 'signal' as const;
  });
  try {
    const running = await startedUnlessStopped(start(startUp.signal), startUp.signal, startGraceMs, logger);
    if (running === undefined) return;
    started = true;
    const outcome = await Promise.race([signalled, running.done.then(() => 'done' as const)]);
    if (outcome === 'signal') {
      logger.info(stopping);
      await running.stop();
    }
    await running.done;
  } finally {
    finished.abort();
  }
}

/** The started component, or undefined when a stop request ended start-up or outlasted its grace. */
async function startedUnlessStopped(
  starting: Promise<Running>,
  stop: AbortSignal,
  graceMs: number,
  logger: Pick<Logger, 'info' | 'warn'>,
): Promise<Running | undefined> {
  const stopped = Promise.withResolvers<undefined>();
  let timer: NodeJS.Timeout | undefined;
  const onStop = () => {
    timer = setTimeout(() => {
      logger.warn({ graceMs }, 'start-up did not end after the stop request: exiting without it');
      // Whatever start-up still does is stopped should it finish; the CLI's exit usually comes first.
      starting.then((late) => late.stop()).catch(() => {});
      stopped.resolve(undefined);
    }, graceMs);
  };
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  try {
    return await Promise.race([
      starting.catch((err: unknown) => {
        if (!stop.aborted) throw err;
        logger.info({ err }, 'start-up ended by the stop request');
        return undefined;
      }),
      stopped.promise,
    ]);
  } finally {
    stop.removeEventListener('abort', onStop);
    clearTimeout(timer);
  }
}

/**
 * The logger of a command, its level from the configuration: its first line warns of what travels in
 * clear when ALLOW_INSECURE_TRANSPORT=true let it.
 */
export function commandLogger(config: LoggingConfig): Logger {
  const logger = createLogger({ level: config.logLevel });
  warnOfClearText(logger, config);
  return logger;
}
