import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

export function registerConnectorCommand(program: Command, _ctx: CliContext): void {
  program.command('connector').description('(not built yet)');
}
