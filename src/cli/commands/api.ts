import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

export function registerApiCommand(program: Command, _ctx: CliContext): void {
  program.command('api').description('(not built yet)');
}
