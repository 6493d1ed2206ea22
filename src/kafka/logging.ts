import type { logCreator } from '@fraudlink/kafkajs';
import type { Logger } from '../logger.ts';
import kafkajs, { PartitionBatchTooLargeError } from './kafkajs.ts';

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
      // A send refused before any request, to be cut into smaller ones (fixes/oversized-partition-batch.ts).
      if (
        message.startsWith('Limiting retries for the idempotent producer') ||
        message.startsWith(PartitionBatchTooLargeError.prefix) ||
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
