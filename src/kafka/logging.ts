import type { logCreator } from 'kafkajs';
import type { Logger } from '../logger.ts';
import kafkajs from './kafkajs.ts';

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
/** The warning's stack names the setTimeout caller: only kafkajs's own negative delays are muted. */
const FROM_KAFKAJS = /[\\/]kafkajs[\\/]/;

/**
 * kafkajs computes negative setTimeout delays: its request queue schedules the throttle check with
 * `throttledUntil - Date.now()`, and `throttledUntil` starts at -1 (not throttled), so unthrottled it
 * asks for a delay of about minus the current epoch (seen: -1795349170548). Node 24 clamps the
 * delay to 1 ms, which is what kafkajs means, and emits a TimeoutNegativeWarning that Node's default
 * 'warning' listener prints on stderr. So that listener is wrapped: that warning, when kafkajs set
 * the timer, is logged at debug; every other warning (a negative delay of our own included) still
 * reaches Node's printer (and honours --no-warnings). Node emits this warning once per process, at
 * the first negative delay. Warnings are process-wide, so the wrapper is installed once per process
 * whatever the number of clients.
 */
export function routeKafkajsWarnings(logger: Logger): void {
  if (warningFilterInstalled) return;
  warningFilterInstalled = true;
  const original = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'TimeoutNegativeWarning' && FROM_KAFKAJS.test(warning.stack ?? '')) {
      logger.debug({ warning: warning.message }, 'negative timer delay from kafkajs clamped to 1 ms');
      return;
    }
    for (const listener of original) listener.call(process, warning);
  });
}
