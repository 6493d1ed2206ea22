import { Command, CommanderError } from 'commander';
import { ExitCodes, exitCodeFor, FraudlinkError } from '../errors.ts';
import { registerApiCommand } from './commands/api.ts';
import { registerConnectorCommand } from './commands/connector.ts';
import { registerReplayCommand } from './commands/replay.ts';
import { registerSandboxCommand } from './commands/sandbox.ts';
import { registerTableCommand } from './commands/table.ts';
import { registerVerifierCommand } from './commands/verifier.ts';
import type { CliContext } from './context.ts';
import { keepStopSignals } from './signals.ts';

export function buildProgram(ctx: CliContext): Command {
  const program = new Command('fraudlink')
    .description('Bridge between the fraud-alert / Verification-of-Payee service and Apache Kafka')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(s),
    })
    .showHelpAfterError('(add --help for usage)');
  registerConnectorCommand(program, ctx);
  registerVerifierCommand(program, ctx);
  registerReplayCommand(program, ctx);
  registerSandboxCommand(program, ctx);
  registerApiCommand(program, ctx);
  registerTableCommand(program, ctx);
  return program;
}

/** Runs the CLI and resolves with the process exit code (docs/contract.md#exit-codes). */
export async function main(argv: string[], ctx: Partial<CliContext> = {}): Promise<number> {
  const context: CliContext = {
    env: ctx.env ?? process.env,
    stdout: ctx.stdout ?? process.stdout,
    stderr: ctx.stderr ?? process.stderr,
    exitCode: ExitCodes.OK,
  };
  const program = buildProgram(context);
  if (argv.length <= 2) {
    program.outputHelp();
    return ExitCodes.USAGE;
  }
  try {
    await program.parseAsync(argv);
    return context.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end through here with exit code 0.
      return err.exitCode === 0 ? ExitCodes.OK : ExitCodes.USAGE;
    }
    if (err instanceof FraudlinkError) {
      context.stderr.write(`fraudlink: ${err.code}: ${err.message}\n`);
    } else {
      context.stderr.write(
        `fraudlink: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
    }
    return exitCodeFor(err);
  }
}

// Run directly (`node src/cli/main.ts ...`), as tests and npm scripts do before a build exists; with
// the launcher's signal keeper, installed late here (the modules above are loaded already).
if (import.meta.main) {
  keepStopSignals();
  main(process.argv).then(exitWith);
}

/**
 * Ends the process with `code`, at once (after stdout drains): a Kafka client or timer left behind by
 * a failure, or by a start-up that a SIGTERM cut short, must not keep a half-stopped component alive.
 */
export function exitWith(code: number): void {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}
