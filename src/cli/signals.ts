import { constants } from 'node:os';

// SIGTERM and SIGINT from the launcher's first line until a command handles them. The image runs
// Node as PID 1 with no init, and the kernel drops a signal that PID 1 has no handler for: loading
// the CLI takes a few hundred ms, and a SIGTERM then was lost until the SIGKILL at the end of the
// pod's grace. The launcher (bin/fraudlink.js) installs a keeper before it loads the CLI; a command
// takes the signals over through onStopSignal. The state is process-wide, as signal handlers are:
// the launcher and the CLI share this module. Without the launcher (main() in tests) there is none.
// A second signal during a graceful stop would be dropped the same way, were the command to let go
// of the signals at the first: onStopSignal listens on until the command has ended, and ends the
// process on it.

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** Removes the keeper's listeners, while it is installed. */
let keeper: (() => void) | undefined;

/** 128 plus the signal's number (143 for SIGTERM, 130 for SIGINT), as a shell reports a process it ended. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

const exitProcess = (code: number) => process.exit(code);

/**
 * Installs the keeper: until a command takes the signals over, SIGTERM or SIGINT ends the process at
 * once with signalExitCode, since nothing has started yet. It exits rather than re-raising the
 * signal: as PID 1 a re-raised signal would be dropped as well.
 */
export function keepStopSignals(exit: (code: number) => void = exitProcess): void {
  if (keeper) return;
  keeper = listen((signal) => exit(signalExitCode(signal)));
}

/**
 * How long after the first stop signal the same signal again is taken for that one delivered twice:
 * `npm run` and `npx` forward a terminal's Ctrl-C to the command, which gets it from the terminal as
 * well (one process group), a few ms apart. A second Ctrl-C of a person's comes later.
 */
export const REPEAT_WINDOW_MS = 500;

/**
 * Calls `listener` on the first SIGTERM or SIGINT; any stop signal after it, while the command stops,
 * ends the process at once with signalExitCode, as a second Ctrl-C does outside PID 1 (the default
 * action), but the same signal again within REPEAT_WINDOW_MS. Both hold until the returned function
 * is called, which the command does once it has ended, stopped or not: no listener outlives it.
 * Takes the signals over from the keeper, which is gone from then on. A signal the keeper had not yet
 * handled reaches `listener`: Node emits a signal to the listeners present when it handles it.
 */
export function onStopSignal(
  listener: (signal: NodeJS.Signals) => void,
  exit: (code: number) => void = exitProcess,
  now: () => number = performance.now.bind(performance),
): () => void {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  const off = listen((signal) => {
    if (!first) {
      first = { signal, at: now() };
      return listener(signal);
    }
    if (signal === first.signal && now() - first.at < REPEAT_WINDOW_MS) return;
    exit(signalExitCode(signal));
  });
  // Only after `listener` is added: Node stops watching a signal when its last listener goes, and
  // for that moment the kernel's default action would apply (for PID 1, the signal dropped).
  keeper?.();
  keeper = undefined;
  return off;
}

/** Adds `listener` for each stop signal, called with the signal's name; returns its removal. */
function listen(listener: (signal: NodeJS.Signals) => void): () => void {
  const handlers = STOP_SIGNALS.map((name) => [name, () => listener(name)] as const);
  for (const [name, handler] of handlers) process.on(name, handler);
  return () => {
    for (const [name, handler] of handlers) process.off(name, handler);
  };
}
