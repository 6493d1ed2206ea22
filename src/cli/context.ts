import type { Env } from '../config/index.ts';

/** What a command needs from its process; tests pass their own streams and environment. */
export interface CliContext {
  env: Env;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Set by a command that wants a non-zero exit without throwing. */
  exitCode: number;
}
