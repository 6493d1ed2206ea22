import type { Command } from 'commander';
import { loadVerifierConfig } from '../../config/index.ts';
import type { CliContext } from '../context.ts';
import { commandLogger, nonEmpty, serveUntilSignal } from '../options.ts';
import { registerVerifierSkipCommand } from './verifier-skip.ts';

export function registerVerifierCommand(program: Command, ctx: CliContext): void {
  const verifier = program
    .command('verifier')
    .description(
      'serve Verification of Payee requests from Kafka: exactly one reply per request (skip: move a stuck record past)',
    )
    .option(
      '--instance-id <id>',
      'stable id of this instance (transactional id suffix); default: the host name',
      nonEmpty,
    )
    .addHelpText(
      'after',
      '\nConfigured by environment variables (see README). Exit codes: 0 stopped, 1 failure, 2 configuration, 3 credentials refused by the upstream, 4 fenced, 143 or 130 a second SIGTERM or SIGINT during the stop.',
    )
    .action(async (opts: { instanceId?: string }) => {
      const config = loadVerifierConfig(ctx.env);
      const logger = commandLogger(config);
      const { startVerifier } = await import('../../verifier/index.ts');
      await serveUntilSignal(
        (signal) => startVerifier(config, logger, { signal, instanceId: opts.instanceId }),
        logger,
        'stopping: draining in-flight verifications',
      );
      logger.info('verifier stopped');
    });
  registerVerifierSkipCommand(verifier, ctx);
}
