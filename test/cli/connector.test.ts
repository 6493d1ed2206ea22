import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** `fraudlink connector ...` as a child process with an empty environment. */
function fraudlink(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['src/cli/main.ts', 'connector', ...args],
      { env: { PATH: process.env.PATH ?? '' } },
      (error, _stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr });
      },
    );
  });
}

describe('fraudlink connector reset', { timeout: 30_000 }, () => {
  it.each([
    ['a bare number', '5'],
    ['a day February does not have', '2026-02-31T00:00:00Z'],
  ])('refuses --updated-after as %s with exit 2, naming the option', async (_what, value) => {
    const run = await fraudlink(['reset', '--updated-after', value]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`option '--updated-after <instant>' argument '${value}' is invalid`);
    // Refused while the arguments are read, before the configuration or Kafka is looked at.
    expect(run.stderr).not.toContain('CONFIG_INVALID');
  });
});
