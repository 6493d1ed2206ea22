import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { type Command, InvalidArgumentError } from 'commander';
import { isLoopbackHost } from '../../config/clear-text.ts';
import { loadSandboxConfig } from '../../config/index.ts';
import { FraudlinkError, UsageError } from '../../errors.ts';
import { createLogger, type Logger } from '../../logger.ts';
import { checkFaults } from '../../sandbox/faults.ts';
import type { Sandbox, SandboxFaults, SandboxOptions } from '../../sandbox/index.ts';
import type { CliContext } from '../context.ts';
import { checkedBy, collect, integer, nonEmpty, untilSignal } from '../options.ts';

const faultNames: Record<string, keyof SandboxFaults> = {
  latency: 'latencyMs',
  'error-rate': 'errorRate',
  'reset-rate': 'resetRate',
  burst429: 'burst429',
  'malformed-rate': 'malformedRowRate',
};

/** `--fault NAME=NUMBER`, repeatable; each value checked like the admin endpoint checks it. */
function fault(value: string, previous: Partial<SandboxFaults> = {}): Partial<SandboxFaults> {
  const match = /^([a-z0-9-]+)=(\d+(?:\.\d+)?)$/.exec(value.trim());
  const key = match ? faultNames[match[1] ?? ''] : undefined;
  if (!match || !key) {
    throw new InvalidArgumentError(
      `"${value}" is not NAME=NUMBER with NAME one of ${Object.keys(faultNames).join(', ')}`,
    );
  }
  try {
    return { ...previous, ...checkFaults({ [key]: Number(match[2]) }) };
  } catch (err) {
    throw new InvalidArgumentError(`${match[1]}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const apiKey = checkedBy('apiKey');

function basePath(value: string): string {
  if (!/^(\/[\w.~-]+)*$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a path like /api`);
  return value;
}

interface Flags {
  host: string;
  port: number;
  basePath: string;
  apiKey: string[];
  alerts: number;
  seed: number;
  changesPerSec: number;
  pageSize: number;
  rateLimit: number;
  cursorParam: string;
  fault: Partial<SandboxFaults>;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  adminToken?: string;
}

function readPem(file: string, flag: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${file}`, { cause: err });
  }
}

/** Runs `check` and turns what it throws into a usage error saying `problem`. */
function usable(problem: string, check: () => unknown): void {
  try {
    check();
  } catch (err) {
    throw new UsageError(`${problem} (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
}

/**
 * The TLS files, read and tried here: OpenSSL's own errors would only surface when the server is
 * built, without saying which flag is wrong, and a CA it cannot read is silently ignored.
 */
function tlsOf(flags: Flags): SandboxOptions['tls'] {
  if (!flags.tlsCert && !flags.tlsKey) {
    if (flags.tlsCa) throw new UsageError('--tls-ca needs --tls-cert and --tls-key');
    return undefined;
  }
  if (!flags.tlsCert || !flags.tlsKey) throw new UsageError('--tls-cert and --tls-key go together');
  const cert = readPem(flags.tlsCert, '--tls-cert');
  const key = readPem(flags.tlsKey, '--tls-key');
  usable(`--tls-cert: ${flags.tlsCert} is not a PEM certificate`, () => createSecureContext({ cert }));
  usable(`--tls-key: ${flags.tlsKey} is not a PEM private key`, () => createSecureContext({ key }));
  usable(`--tls-key: ${flags.tlsKey} is not the key of --tls-cert ${flags.tlsCert}`, () =>
    createSecureContext({ cert, key }),
  );
  if (!flags.tlsCa) return { cert, key };
  const ca = readPem(flags.tlsCa, '--tls-ca');
  usable(`--tls-ca: ${flags.tlsCa} is not a PEM certificate`, () => {
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no BEGIN CERTIFICATE line');
    return new X509Certificate(ca);
  });
  return { cert, key, ca, requestClientCert: true };
}

/** A listen failure that --port or --host caused, as a usage error naming it; others as they are. */
function listenError(err: unknown, flags: Flags): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const detail = err instanceof Error ? err.message : String(err);
  const usage = (message: string) => new UsageError(`${message} (${detail})`, { cause: err });
  if (code === 'EADDRINUSE') return usage(`--port ${flags.port}: address already in use on ${flags.host}`);
  if (code === 'EACCES') return usage(`--port ${flags.port}: not allowed to listen on this port`);
  if (code === 'ENOTFOUND') return usage(`--host ${flags.host}: the name does not resolve`);
  if (code === 'EADDRNOTAVAIL') return usage(`--host ${flags.host}: not an address of this machine`);
  return err;
}

async function run(flags: Flags, ctx: CliContext): Promise<void> {
  const { logLevel, adminToken } = loadSandboxConfig(ctx.env);
  const logger = createLogger({ level: logLevel }).child({ component: 'sandbox' });
  const token = flags.adminToken ?? adminToken;
  if (token === undefined && !isLoopbackHost(flags.host)) {
    throw new UsageError(
      `--host ${flags.host} is not loopback: /__admin then needs a token (--admin-token or SANDBOX_ADMIN_TOKEN)`,
    );
  }
  // Listen for signals first: seeding a large backlog takes seconds, and a signal meanwhile must
  // still end in a clean exit 0, as must one sent right after the ready line. The end lets go of
  // them, a failed start-up's too: the error's exit follows, and a signal meanwhile must not be
  // swallowed.
  const finished = new AbortController();
  const signal = untilSignal(finished.signal);
  try {
    const { sandbox, ready } = await startSandbox(
      { ...flags, ...(token !== undefined && { adminToken: token }) },
      logger,
    );
    ctx.stdout.write(`${JSON.stringify(ready)}\n`);
    logger.info({ signal: await signal }, 'stopping');
    await sandbox.stop();
  } finally {
    finished.abort();
  }
  ctx.exitCode = 0;
}

/** Makes and starts the sandbox, refusals of its flags as usage errors. */
async function startSandbox(flags: Flags, logger: Logger) {
  const { createSandbox } = await import('../../sandbox/index.ts');
  let sandbox: Sandbox;
  try {
    sandbox = createSandbox({
      host: flags.host,
      port: flags.port,
      basePath: flags.basePath,
      apiKeys: flags.apiKey,
      alerts: flags.alerts,
      seed: flags.seed,
      changesPerSec: flags.changesPerSec,
      pageSize: flags.pageSize,
      rateLimit: flags.rateLimit,
      cursorParam: flags.cursorParam,
      faults: flags.fault,
      logger,
      tls: tlsOf(flags),
      ...(flags.adminToken !== undefined && { adminToken: flags.adminToken }),
    });
  } catch (err) {
    if (err instanceof FraudlinkError) throw err;
    throw new UsageError(err instanceof Error ? err.message : String(err), { cause: err });
  }
  try {
    return { sandbox, ready: await sandbox.start() };
  } catch (err) {
    throw listenError(err, flags);
  }
}

export function registerSandboxCommand(program: Command, ctx: CliContext): void {
  program
    .command('sandbox')
    .description('run a local stand-in for the upstream service (all five endpoints, per-tenant 429, faults)')
    .option('--host <host>', 'address to listen on', nonEmpty, '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 = any free port)', integer(0, 65_535), 8080)
    .option(
      '--base-path <path>',
      'serve under this path prefix, e.g. /api (the printed url includes it)',
      basePath,
      '',
    )
    .option(
      '--api-key <key>',
      'an accepted API key, one tenant each (repeatable; default sandbox-key; as API_KEY, trimmed)',
      (value: string, previous: string[]) => collect(apiKey(value), previous),
      [],
    )
    .option('--alerts <n>', 'seeded alerts', integer(0, 50_000_000), 1000)
    .option('--seed <n>', 'seed of the data set and of the changes', integer(0, 2 ** 32 - 1), 1)
    .option('--changes-per-sec <n>', 'steady stream of alert changes (0 = none)', integer(0, 1_000_000), 5)
    .option('--page-size <n>', 'rows per export page', integer(1, 1_000_000), 500)
    .option(
      '--rate-limit <n>',
      'export requests per second per tenant before 429 (0 = unlimited)',
      integer(0, 1_000_000),
      10,
    )
    .option(
      '--cursor-param <name>',
      'query parameter of the export cursor (as EXPORT_CURSOR_PARAM: trimmed, not updatedAfter)',
      checkedBy('cursorParam'),
      'cursor',
    )
    .option(
      '--fault <name=value>',
      `inject a fault (repeatable): ${Object.keys(faultNames).join(', ')}; e.g. latency=50 error-rate=0.1`,
      fault,
      {},
    )
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM)', nonEmpty)
    .option('--tls-key <file>', 'private key of --tls-cert (PEM)', nonEmpty)
    .option('--tls-ca <file>', 'require client certificates signed by this CA (mutual TLS)', nonEmpty)
    .option(
      '--admin-token <token>',
      'bearer token /__admin requires (or SANDBOX_ADMIN_TOKEN); needed when --host is not loopback',
      apiKey,
    )
    .addHelpText(
      'after',
      '\nPrints one JSON line {"url","apiKeys"} on stdout when ready (url = API_BASE_URL); logs go to stderr.\n' +
        'Runs until SIGTERM or SIGINT, then exits 0 (143 or 130 on a second one during the stop). Admin\n' +
        'endpoints: see src/sandbox/README.md.',
    )
    .action((flags: Flags) => run(flags, ctx));
}
