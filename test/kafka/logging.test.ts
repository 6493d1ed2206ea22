import kafkajs from '@fraudlink/kafkajs';
import { describe, expect, it } from 'vitest';
import { PartitionBatchTooLargeError } from '../../src/kafka/kafkajs.ts';
import { pinoLogCreator } from '../../src/kafka/logging.ts';
import { createLogger } from '../../src/logger.ts';
import { logCapture } from '../helpers/log.ts';

const { logLevel } = kafkajs;

function capture() {
  const out = logCapture();
  return { ...out, logger: createLogger({ level: 'trace', destination: out.stream }) };
}

describe('kafkajs logs in pino', () => {
  it('maps kafkajs levels, its chatty INFO to debug, with its fields nested under kafkajs', () => {
    const out = capture();
    const log = pinoLogCreator(out.logger)(logLevel.DEBUG);
    const entry = (level: number, message: string) => ({
      namespace: 'Consumer',
      level,
      label: '',
      log: { message, timestamp: 'now', logger: 'kafkajs', groupId: 'g' },
    });
    log(entry(logLevel.ERROR, 'crashed'));
    log(entry(logLevel.WARN, 'slow'));
    log(entry(logLevel.INFO, 'joined'));
    log(entry(logLevel.DEBUG, 'fetch'));
    expect(out.lines.map((l) => [l.level, l.msg])).toEqual([
      ['error', 'crashed'],
      ['warn', 'slow'],
      ['debug', 'joined'],
      ['trace', 'fetch'],
    ]);
    expect(out.lines[0]).toMatchObject({ namespace: 'Consumer', kafkajs: { groupId: 'g' } });
  });

  it('logs a CONCURRENT_TRANSACTIONS retry after a commit at debug, not as an error', () => {
    const out = capture();
    pinoLogCreator(out.logger)(logLevel.DEBUG)({
      namespace: 'Producer',
      level: logLevel.ERROR,
      label: 'ERROR',
      log: {
        message: 'Failed to add partitions to transaction',
        timestamp: 'now',
        logger: 'kafkajs',
        error: 'There is already another concurrent operation on the same transaction',
      },
    });
    expect(out.lines.map((l) => l.level)).toEqual(['debug']);
  });

  it('logs a send refused to be cut (kafkajs.ts fix 15) at debug, not as an error', () => {
    const out = capture();
    const message = new PartitionBatchTooLargeError('dlq', 0, 2_000_000).message;
    pinoLogCreator(out.logger)(logLevel.DEBUG)({
      namespace: 'Producer',
      level: logLevel.ERROR,
      label: 'ERROR',
      log: { message, timestamp: 'now', logger: 'kafkajs', retryCount: 0, retryTime: 5 },
    });
    expect(out.lines.map((l) => [l.level, l.msg])).toEqual([['debug', message]]);
  });
});
