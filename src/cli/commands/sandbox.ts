import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

export function registerSandboxCommand(program: Command, _ctx: CliContext): void {
  program.command('sandbox').description('(not built yet)');
}
