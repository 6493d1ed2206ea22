import type { Command } from 'commander';
import { loadTableConfig } from '../../config/index.ts';
import { createLogger } from '../../logger.ts';
import type { CliContext } from '../context.ts';
import { serveUntilSignal } from '../options.ts';

export function registerTableCommand(program: Command, ctx: CliContext): void {
  program
    .command('table')
    .description('keep the current alert table in a local store and answer IBAN lookups over HTTP')
    .addHelpText(
      'after',
      '\nConfigured by environment variables (see docs/table.md): KAFKA_BROKERS, SCHEMA_REGISTRY_URL, ALERTS_TOPIC, TABLE_DB_PATH, TABLE_API_KEYS, HTTP_PORT, HTTP_HOST. Exit codes: 0 stopped, 1 failure (the store cannot be written), 2 configuration, 143 or 130 a second SIGTERM or SIGINT during the stop.',
    )
    .action(async () => {
      const config = loadTableConfig(ctx.env);
      const logger = createLogger({ level: config.logLevel });
      const { startTableService } = await import('../../table/index.ts');
      await serveUntilSignal(
        (signal) => startTableService(config, logger, { signal }),
        logger,
        'stopping the alert table service',
      );
      logger.info('alert table service stopped');
    });
}
