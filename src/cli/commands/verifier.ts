import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

export function registerVerifierCommand(program: Command, _ctx: CliContext): void {
  program.command('verifier').description('(not built yet)');
}
