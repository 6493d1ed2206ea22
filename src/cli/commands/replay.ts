import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

export function registerReplayCommand(program: Command, _ctx: CliContext): void {
  program.command('replay').description('(not built yet)');
}
