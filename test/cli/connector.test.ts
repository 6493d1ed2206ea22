import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it, onTestFinished } from 'vitest';

/** `fraudlink connector ...` as a child process with an empty environment. */
function fraudlink(args: string[]): Promise<{ code: number; stderr: string }> {
  return fraudlinkWith(args, {});
}

/** `fraudlink connector ...` as a child process with `env` alone. */
function fraudlinkWith(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['src/cli/main.ts', 'connector', ...args],
      { env: { PATH: process.env.PATH ?? '', ...env } },
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

describe('fraudlink connector status and reset configuration', { timeout: 30_000 }, () => {
  // They refused to run without API_BASE_URL and API_KEY (and SCHEMA_REGISTRY_URL), which they never
  // use; what they do use is still refused by name, before Kafka is looked at.
  it.each([['status'], ['reset', '--earliest']])(
    '%s refuses a bad variable it reads by name, and asks for none it does not read',
    async (...args) => {
      const run = await fraudlinkWith(args, { KAFKA_BROKERS: 'k:1', CONNECTOR_NAME: 'no spaces' });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        'fraudlink: CONFIG_INVALID: invalid configuration: CONNECTOR_NAME: must be letters, digits, ".", "_" or "-"\n',
      );
    },
  );
});

/**
 * `fraudlink connector ...` as a child process with a broker that refuses connections; resolves once
 * kafkajs has logged a failed connection (it then retries for tens of seconds).
 */
async function connectingInVain(args: string[]) {
  const env = {
    PATH: process.env.PATH ?? '',
    API_BASE_URL: 'http://127.0.0.1:1/api',
    API_KEY: 'k',
    KAFKA_BROKERS: '127.0.0.1:1',
    SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1',
    HTTP_PORT: '0',
  };
  const child = spawn(process.execPath, ['src/cli/main.ts', 'connector', ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  // 'close', not 'exit': the output is read to its end.
  const exited = once(child, 'close');
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  await new Promise<void>((resolve) => {
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('Connection error')) resolve();
    });
  });
  return {
    /** Sends `signal`, then resolves with the exit code and the output once the process has ended. */
    async stop(signal: NodeJS.Signals) {
      child.kill(signal);
      const [code] = await exited;
      return { code, stdout, stderr };
    },
  };
}

describe('fraudlink connector run', { timeout: 15_000 }, () => {
  // Start-up took no notice of the stop request: kafkajs retried on, and the command returned only
  // after START_ABORT_GRACE_MS, warning that it exited without the start-up.
  it('ends a start-up that cannot reach the broker at once on SIGTERM, with exit 0', async () => {
    const { code, stderr } = await (await connectingInVain([])).stop('SIGTERM');
    expect(code).toBe(0);
    expect(stderr).toContain('"msg":"start-up ended by the stop request"');
    expect(stderr).not.toContain('start-up did not end after the stop request');
  });
});

describe('fraudlink connector status and reset on a signal', { timeout: 15_000 }, () => {
  // Both waited out kafkajs's retries with no handler (as PID 1, a SIGTERM was dropped), and a
  // SIGTERM outside PID 1 killed them without a word.
  it.each([
    ['status', [], 'SIGTERM', 143, 'the cursor record was not read'],
    ['reset', ['--earliest'], 'SIGINT', 130, 'the cursor was not reset'],
  ] as const)(
    '%s stops waiting for an unreachable broker on a signal, says so and exits 128 + its number',
    async (command, args, signal, exitCode, undone) => {
      const { code, stdout, stderr } = await (await connectingInVain([command, ...args])).stop(signal);
      expect(code).toBe(exitCode);
      expect(stdout).toBe('');
      expect(stderr).toContain(`"signal":"${signal}","msg":"stopped by ${signal}: ${undone}"`);
    },
  );
});
