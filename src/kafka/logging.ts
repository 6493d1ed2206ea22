import kafkajs, { type logCreator } from 'kafkajs';
import type { Logger } from '../logger.ts';

// kafkajs is CommonJS: its values come through the default export.
const { logLevel } = kafkajs;

/** kafkajs log lines into pino. kafkajs is chatty at INFO (every join, every connect): that is debug for us. */
export function pinoLogCreator(logger: Logger): logCreator {
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _t, logger: _l, ...extra } = log;
      const fields = { namespace, kafkajs: extra };
      // Bounded retries are deliberate: a failed send aborts its whole transaction, so exactly-once holds.
      // CONCURRENT_TRANSACTIONS right after a commit is kafkajs issue #304, retried at once: not an error.
      const concurrent = (extra as { error?: string }).error?.includes(
        'another concurrent operation on the same transaction',
      );
      if (
        message.startsWith('Limiting retries for the idempotent producer') ||
        concurrent ||
        message.includes('another concurrent operation on the same transaction')
      ) {
        logger.debug(fields, message);
        return;
      }
      if (level === logLevel.ERROR) logger.error(fields, message);
      else if (level === logLevel.WARN) logger.warn(fields, message);
      else if (level === logLevel.INFO) logger.debug(fields, message);
      else logger.trace(fields, message);
    };
}

let warningFilterInstalled = false;

/**
 * kafkajs computes negative setTimeout delays: its request queue schedules the throttle check with
 * `throttledUntil - Date.now()`, and `throttledUntil` starts at -1 (not throttled), so the first
 * request on every connection asks for a delay of about minus the current epoch. Node 24 clamps the
 * delay to 1 ms, which is what kafkajs means, and emits a TimeoutNegativeWarning that Node's default
 * 'warning' listener prints on stderr. So that listener is wrapped: that one warning is logged at
 * debug, every other warning still reaches Node's printer (and honours --no-warnings). Warnings are
 * process-wide, so the wrapper is installed once per process whatever the number of clients.
 */
export function routeKafkajsWarnings(logger: Logger): void {
  if (warningFilterInstalled) return;
  warningFilterInstalled = true;
  const original = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'TimeoutNegativeWarning') {
      logger.debug({ warning: warning.message }, 'negative timer delay from kafkajs clamped to 1 ms');
      return;
    }
    for (const listener of original) listener.call(process, warning);
  });
}
