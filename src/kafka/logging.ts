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
 * kafkajs's request queue schedules its throttle check with `throttledUntil - Date.now()`, which is
 * negative once the throttle has passed; Node 24 clamps the delay to 1 ms and emits a
 * TimeoutNegativeWarning. The behaviour is harmless, so the warning is logged at debug instead of
 * being printed on the user's terminal. Every other warning still reaches Node's own printer.
 * Process-wide by nature, so installed once per process.
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
