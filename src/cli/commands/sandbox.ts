import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import { createLogger } from '../../logger.ts';
import { createSandbox, type SandboxFaults } from '../../sandbox/index.ts';
import type { CliContext } from '../context.ts';
import { collect, integer, untilSignal } from '../options.ts';

const faultNames: Record<string, keyof SandboxFaults> = {
  latency: 'latencyMs',
  'error-rate': 'errorRate',
  'reset-rate': 'resetRate',
  burst429: 'burst429',
  'malformed-rate': 'malformedRowRate',
};

function fault(value: string, previous: Partial<SandboxFaults> = {}): Partial<SandboxFaults> {
  const match = /^([a-z0-9-]+)=([0-9.]+)$/.exec(value);
  const key = match ? faultNames[match[1] ?? ''] : undefined;
  if (!match || !key) {
    throw new InvalidArgumentError(
      `"${value}" is not NAME=NUMBER with NAME one of ${Object.keys(faultNames).join(', ')}`,
    );
  }
  const n = Number(match[2]);
  if ((key === 'errorRate' || key === 'resetRate' || key === 'malformedRowRate') && n > 1) {
    throw new InvalidArgumentError(`${match[1]} is a ratio from 0 to 1`);
  }
  return { ...previous, [key]: n };
}

export function registerSandboxCommand(program: Command, ctx: CliContext): void {
  program
    .command('sandbox')
    .description('run a local stand-in for the upstream service (all five endpoints, per-tenant 429, faults)')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 = any free port)', integer(0, 65_535), 8080)
    .option(
      '--api-key <key>',
      'an accepted API key, one tenant each (repeatable; default sandbox-key)',
      collect,
      [],
    )
    .option('--alerts <n>', 'seeded alerts', integer(0, 10_000_000), 1000)
    .option('--seed <n>', 'seed of the data set and of the changes', integer(0), 1)
    .option('--changes-per-sec <n>', 'steady stream of alert changes (0 = none)', integer(0, 100_000), 5)
    .option('--page-size <n>', 'rows per export page', integer(1, 100_000), 500)
    .option(
      '--rate-limit <n>',
      'export requests per second per tenant before 429 (0 = unlimited)',
      integer(0),
      10,
    )
    .option('--cursor-param <name>', 'query parameter of the export cursor', 'cursor')
    .option(
      '--fault <name=value>',
      `inject a fault (repeatable): ${Object.keys(faultNames).join(', ')}; e.g. latency=50 error-rate=0.1`,
      fault,
      {},
    )
    .option('--tls-cert <file>', 'serve HTTPS with this certificate')
    .option('--tls-key <file>', 'private key of --tls-cert')
    .option('--tls-ca <file>', 'require client certificates signed by this CA (mutual TLS)')
    .addHelpText('after', '\nPrints one JSON line {"url","apiKeys"} on stdout when ready; logs go to stderr.')
    .action(async (opts) => {
      const logger = createLogger({ level: String(ctx.env.LOG_LEVEL ?? 'info') });
      if (Boolean(opts.tlsCert) !== Boolean(opts.tlsKey)) {
        throw new InvalidArgumentError('--tls-cert and --tls-key go together');
      }
      const sandbox = createSandbox({
        host: opts.host,
        port: opts.port,
        apiKeys: opts.apiKey,
        alerts: opts.alerts,
        seed: opts.seed,
        changesPerSec: opts.changesPerSec,
        pageSize: opts.pageSize,
        rateLimit: opts.rateLimit,
        cursorParam: opts.cursorParam,
        faults: opts.fault,
        logger: logger.child({ component: 'sandbox' }),
        ...(opts.tlsCert && {
          tls: {
            cert: readFileSync(opts.tlsCert),
            key: readFileSync(opts.tlsKey),
            ...(opts.tlsCa && { ca: readFileSync(opts.tlsCa), requestClientCert: true }),
          },
        }),
      });
      const signal = untilSignal();
      const ready = await sandbox.start();
      ctx.stdout.write(`${JSON.stringify(ready)}\n`);
      await signal;
      await sandbox.stop();
    });
}
