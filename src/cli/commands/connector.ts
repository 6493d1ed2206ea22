import type { Command } from 'commander';
import { loadConnectorConfig, loadCursorConfig } from '../../config/index.ts';
import { boundHeapGrowth } from '../../connector/heap.ts';
import { readCursorRecord, resetCursorRecord, startConnector } from '../../connector/index.ts';
import { UsageError } from '../../errors.ts';
import { createKafkaClient } from '../../kafka/index.ts';
import type { CliContext } from '../context.ts';
import { commandLogger, instant, serveUntilSignal, unlessSignalled } from '../options.ts';

const CURSOR_VARIABLES =
  'Reads KAFKA_* (brokers, client id, TLS, SASL), CONNECTOR_OFFSETS_TOPIC, CONNECTOR_NAME and LOG_LEVEL\n' +
  '(ALERTS_TOPIC and ALERTS_DLQ_TOPIC only to refuse an offsets topic that is one of them): neither\n' +
  'the upstream (API_*) nor the schema registry is needed.';

export function registerConnectorCommand(program: Command, ctx: CliContext): void {
  const connector = program
    .command('connector')
    .description(
      'poll the alert export feed and publish exactly-once Avro alert events (run, status, reset)',
    );

  connector
    .command('run', { isDefault: true })
    .description('run the connector until SIGTERM/SIGINT (the default)')
    .addHelpText(
      'after',
      '\nConfigured by environment variables (see README). Exit codes: 0 stopped, 1 failure, 2 configuration, 3 credentials refused, 4 fenced, 143 or 130 a second SIGTERM or SIGINT during the stop.',
    )
    .action(async () => {
      const config = loadConnectorConfig(ctx.env);
      const logger = commandLogger(config);
      // Process-wide, for the main thread and the page worker alike.
      const heapGrowingPercent = boundHeapGrowth();
      logger.debug({ heapGrowingPercent: heapGrowingPercent ?? 'from the command line' }, 'V8 heap growth');
      await serveUntilSignal(
        (signal) => startConnector(config, logger, { signal }),
        logger,
        'stopping: finishing the open transaction',
      );
      logger.info('connector stopped');
    });

  connector
    .command('status')
    .description('print the stored cursor record of CONNECTOR_NAME')
    .addHelpText(
      'after',
      `\n${CURSOR_VARIABLES}\nSIGTERM or SIGINT stops it with nothing printed: exit 143 or 130.`,
    )
    .action(async () => {
      const config = loadCursorConfig(ctx.env);
      const logger = commandLogger(config);
      const kafka = createKafkaClient({ config: config.kafka, logger });
      const read = await unlessSignalled(ctx, logger, 'the cursor record was not read', (signal) =>
        readCursorRecord(kafka, config.offsetsTopic, config.name, { logger, signal }),
      );
      if (read === undefined) return;
      ctx.stdout.write(
        `${JSON.stringify(read.value ?? { connector: config.name, cursor: null, stored: false }, null, 2)}\n`,
      );
    });

  connector
    .command('reset')
    .description('rewrite the cursor for a deliberate replay (fences any running instance)')
    .option('--updated-after <instant>', 'resume the feed after this ISO-8601 instant', instant)
    .option('--earliest', 'resume from the start of the feed')
    .addHelpText(
      'after',
      `\n${CURSOR_VARIABLES}\n` +
        'SIGTERM or SIGINT stops it before the new cursor is written, with the stored one unchanged (a\n' +
        'running connector may already be fenced): exit 143 or 130. A write under way is finished, unless a\n' +
        'second signal ends the process at once.',
    )
    .action(async (opts: { updatedAfter?: string; earliest?: boolean }) => {
      if (Boolean(opts.updatedAfter) === Boolean(opts.earliest)) {
        throw new UsageError('give exactly one of --updated-after <instant> and --earliest');
      }
      const config = loadCursorConfig(ctx.env);
      const logger = commandLogger(config);
      const kafka = createKafkaClient({ config: config.kafka, logger });
      const start = opts.earliest ? 'earliest' : new Date(opts.updatedAfter as string);
      const written = await unlessSignalled(ctx, logger, 'the cursor was not reset', (signal) =>
        resetCursorRecord(kafka, config.offsetsTopic, config.name, start, logger, signal),
      );
      if (written === undefined) return;
      ctx.stdout.write(`${JSON.stringify(written.value, null, 2)}\n`);
    });
}
