import { once } from 'node:events';
import type CliProgress from 'cli-progress';
import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  type ApiClient,
  type CallOptions,
  caughtUp,
  ExportCursorCheck,
  isDotSegment,
  pageIdentity,
  type SentSearchFilters,
} from '../../api/index.ts';
import { loadApiConfig } from '../../config/index.ts';
import { AbortedError, ErrorCodes, ExitCodes, FraudlinkError } from '../../errors.ts';
import { isValidNormalizedIban, normalizeIban } from '../../iban.ts';
import type { CliContext } from '../context.ts';
import { commandLogger, instant, integer, nonEmpty, unlessSignalled } from '../options.ts';

const QUALIFICATIONS = ['PENDING', 'CONFIRMED', 'REJECTED', 'UNDER_INVESTIGATION'];

const HELP_FOOTER = `
Configuration (environment): API_BASE_URL and API_KEY (required), API_TIMEOUT_MS, API_TLS_CERT,
API_TLS_KEY, API_TLS_CA, EXPORT_CURSOR_PARAM, LOG_LEVEL (logs are JSON lines on stderr).
Output: JSON on stdout, indented on a terminal, one document per line when piped; with --all, one
alert or row per line. A progress line goes to stderr when it is a terminal.
Exit codes: 0 done (also when the reader of stdout goes away), 1 unexpected failure, 2 usage or
configuration error, 3 credentials refused (401/403), 5 request refused by the upstream (400, 404,
other 4xx), 6 upstream unavailable after the retries (5xx, 429, timeout, connection), 7 unreadable
upstream answer (a 2xx that is not the expected JSON), 143 or 130 stopped by SIGTERM or SIGINT
before done (the output is incomplete).`;

/** The exit code of an upstream failure; undefined leaves the error to the shared CLI main. */
export function apiExitCodeFor(err: unknown): number | undefined {
  if (!(err instanceof FraudlinkError)) return undefined;
  switch (err.code) {
    case ErrorCodes.UPSTREAM_CLIENT_ERROR:
    case ErrorCodes.UPSTREAM_NOT_FOUND:
      return ExitCodes.UPSTREAM_REJECTED;
    case ErrorCodes.UPSTREAM_UNAVAILABLE:
    case ErrorCodes.UPSTREAM_RATE_LIMITED:
    case ErrorCodes.UPSTREAM_TIMEOUT:
    case ErrorCodes.UPSTREAM_CONNECTION:
      return ExitCodes.UPSTREAM_UNAVAILABLE;
    case ErrorCodes.UPSTREAM_BAD_RESPONSE:
      return ExitCodes.UPSTREAM_BAD_RESPONSE;
    default:
      return undefined;
  }
}

function ibanArg(value: string): string {
  const iban = normalizeIban(value);
  if (!isValidNormalizedIban(iban)) throw new InvalidArgumentError(`"${value}" is not a valid IBAN`);
  return iban;
}

/** getAlert refuses `.` and `..` (dot segments in the path): a usage error here, not a failure. */
function alertIdOf(value: string): string {
  const id = nonEmpty(value);
  if (isDotSegment(id)) throw new InvalidArgumentError('must not be "." or ".." (a dot segment in the path)');
  return id;
}

interface Session {
  client: ApiClient;
  /** Per-call options: the abort signal (SIGINT, SIGTERM, closed stdout), retries, retry logging. */
  call: CallOptions;
  /** EXPORT_CURSOR_PARAM, which the client sends the export cursor as. */
  cursorParam: string;
  print(value: unknown): Promise<void>;
  progress(total?: number): { update(pages: number, items: number, total?: number): void; stop(): void };
}

/** Runs one subcommand with a client, then maps upstream failures to their exit codes. */
async function withSession(
  ctx: CliContext,
  retries: number | undefined,
  action: (session: Session) => Promise<void>,
): Promise<void> {
  const config = loadApiConfig(ctx.env);
  const logger = commandLogger(config).child({ component: 'api-cli' });
  const [{ createApiClient }, { default: cliProgress }] = await Promise.all([
    import('../../api/index.ts'),
    import('cli-progress'),
  ]);
  const client = createApiClient({
    baseUrl: config.api.baseUrl,
    apiKey: config.api.key,
    timeoutMs: config.api.timeoutMs,
    cursorParam: config.cursorParam,
    logger,
    ...(config.api.tls && { tls: config.api.tls }),
    ...(retries !== undefined && { retry: { retries } }),
  });
  const controller = new AbortController();
  // A reader that goes away (`| head`) ends the walk quietly instead of crashing on EPIPE.
  const onStdoutError = (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') controller.abort(new AbortedError('stdout closed'));
  };
  ctx.stdout.on('error', onStdoutError);
  const pretty = ctx.stdout.isTTY === true;
  const session: Session = {
    client,
    call: {
      signal: controller.signal,
      onRetry: ({ attempt, delayMs, error }) =>
        logger.warn(
          { attempt, delayMs, code: (error as { code?: unknown }).code },
          'upstream call failed, retrying',
        ),
    },
    cursorParam: config.cursorParam,
    async print(value) {
      if (controller.signal.aborted) throw new AbortedError('output stopped');
      const ok = ctx.stdout.write(`${pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value)}\n`);
      if (!ok) await Promise.race([once(ctx.stdout, 'drain'), once(controller.signal, 'abort')]);
    },
    progress: (total) => progressBar(ctx, total, cliProgress),
  };
  try {
    // SIGINT or SIGTERM cuts the command short: exit 128 + the signal's number.
    await unlessSignalled(ctx, logger, 'the output is incomplete', () => action(session), controller);
  } catch (err) {
    // Aborted otherwise: by a closed stdout.
    if (controller.signal.aborted && err instanceof AbortedError) return;
    const code = apiExitCodeFor(err);
    if (code === undefined) throw err;
    ctx.stderr.write(`fraudlink: ${(err as FraudlinkError).code}: ${(err as Error).message}\n`);
    ctx.exitCode = code;
  } finally {
    ctx.stdout.off('error', onStdoutError);
    await client.close();
  }
}

/** A one-line progress display on stderr, only when stderr is a terminal. */
function progressBar(ctx: CliContext, total: number | undefined, cliProgress: typeof CliProgress) {
  if (ctx.stderr.isTTY !== true) return { update: () => {}, stop: () => {} };
  const format =
    total === undefined ? 'pages {value} | items {items}' : '[{bar}] pages {value}/{total} | items {items}';
  const bar = new cliProgress.SingleBar(
    { format, stream: ctx.stderr as NodeJS.WriteStream, hideCursor: true, noTTYOutput: false },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total ?? 0, 0, { items: 0 });
  return {
    update(pages: number, items: number, newTotal?: number) {
      if (newTotal !== undefined) bar.setTotal(newTotal);
      bar.update(pages, { items });
    },
    stop: () => bar.stop(),
  };
}

function retriesOption(command: Command): Command {
  return command.option(
    '--retries <n>',
    'attempts after the first on 429, 5xx, timeouts and resets (default: 5; export 10)',
    integer(0, 1000),
  );
}

type SearchOptions = SentSearchFilters & { all?: boolean; retries?: number };

function registerSearch(api: Command, ctx: CliContext, sent: boolean): void {
  const command = api
    .command(sent ? 'sent-search' : 'received-search')
    .description(
      sent
        ? 'search the alerts the caller contributed a report to (POST /sharing/v1/alerts/sent/search)'
        : 'search the alerts on accounts the caller holds (POST /sharing/v1/alerts/received/search)',
    )
    .option('--iban <iban>', 'alerts on this IBAN (spaces removed, upper-cased)', (v) =>
      normalizeIban(nonEmpty(v)),
    )
    .addOption(new Option('--qualification <q>', 'aggregate qualification').choices(QUALIFICATIONS))
    .option('--updated-from <instant>', 'updated at or after this ISO-8601 instant', instant)
    .option('--updated-to <instant>', 'updated at or before this ISO-8601 instant', instant);
  if (sent) {
    command
      .option('--bic <bic>', 'alerts associated with this BIC', nonEmpty)
      .option('--author <author>', 'alerts with a report by this institution', nonEmpty);
  }
  command
    .option('--page <n>', '1-based page (with --all: the first page)', integer(1))
    .option('--page-size <n>', 'alerts per page', integer(1, 10_000))
    .option('--all', 'walk every page to the last, printing one alert per line');
  retriesOption(command)
    .addHelpText('after', HELP_FOOTER)
    .action((opts: SearchOptions) =>
      withSession(ctx, opts.retries, async ({ client, call, print, progress }) => {
        const { all, retries: _retries, ...filters } = opts;
        const search = (f: SentSearchFilters) =>
          sent ? client.searchSent(f, call) : client.searchReceived(f, call);
        if (!all) return print(await search(filters));
        let bar: ReturnType<Session['progress']> | undefined;
        let page = filters.page ?? 1;
        let items = 0;
        try {
          for (;;) {
            const answer = await search({ ...filters, page });
            for (const alert of answer.alerts) await print(alert);
            items += answer.alerts.length;
            bar ??= progress(answer.totalPages);
            bar.update(page, items, answer.totalPages);
            if (page >= answer.totalPages || answer.alerts.length === 0) return;
            page++;
          }
        } finally {
          bar?.stop();
        }
      }),
    );
}

function registerExport(api: Command, ctx: CliContext): void {
  const command = api
    .command('export')
    .description('read the incremental alert feed (GET /sharing/v1/alerts/export); rows are printed raw')
    .addOption(
      new Option('--updated-after <instant>', 'resume after this ISO-8601 instant (exclusive)')
        .argParser(instant)
        .conflicts('cursor'),
    )
    .option('--cursor <cursor>', 'continue from the nextCursor of an earlier page', nonEmpty)
    .option('--all', 'follow nextCursor until the feed is caught up, printing one row per line');
  retriesOption(command)
    .addHelpText('after', HELP_FOOTER)
    .action((opts: { updatedAfter?: string; cursor?: string; all?: boolean; retries?: number }) =>
      withSession(ctx, opts.retries, async ({ client, call, cursorParam, print, progress }) => {
        const first =
          opts.cursor !== undefined ? { cursor: opts.cursor } : { updatedAfter: opts.updatedAfter };
        if (!opts.all) {
          const { rows, nextCursor } = await client.exportPage(first, call);
          return print({ rows, nextCursor });
        }
        const bar = progress();
        const cursorCheck = new ExportCursorCheck(cursorParam);
        let request: { cursor?: string; updatedAfter?: string } = first;
        let pages = 0;
        let items = 0;
        try {
          for (;;) {
            const page = await client.exportPage(request, call);
            // Without it, a cursor the upstream does not read would print its first page for ever.
            const { rows } = page;
            const identity = pageIdentity(rows.length, JSON.stringify(rows[0]), JSON.stringify(rows.at(-1)));
            cursorCheck.check(request, page.nextCursor, identity);
            for (const row of rows) await print(row);
            pages++;
            items += rows.length;
            bar.update(pages, items);
            const next = page.nextCursor;
            if (next === null || caughtUp(request, next, rows.length)) return;
            request = { cursor: next };
          }
        } finally {
          bar.stop();
        }
      }),
    );
}

export function registerApiCommand(program: Command, ctx: CliContext): void {
  const api = program
    .command('api')
    .description('call the upstream endpoints directly: sent/received search, get one alert, export, verify')
    .addHelpText('after', HELP_FOOTER);

  registerSearch(api, ctx, true);
  registerSearch(api, ctx, false);

  retriesOption(
    api
      .command('get')
      .description('fetch one alert in full (GET /sharing/v1/alerts/{alertId})')
      .argument('<alertId>', 'the alert identifier', alertIdOf),
  )
    .addHelpText('after', HELP_FOOTER)
    .action((alertId: string, opts: { retries?: number }) =>
      withSession(ctx, opts.retries, async ({ client, call, print }) =>
        print(await client.getAlert(alertId, call)),
      ),
    );

  registerExport(api, ctx);

  retriesOption(
    api
      .command('verify')
      .description('check an IBAN against a party name (POST /vop/v1/verify): MTCH, CMTC, NMTC or NOAP')
      .requiredOption('--iban <iban>', 'the IBAN to verify (checked: ISO 13616 shape and mod-97)', ibanArg)
      .requiredOption('--name <name>', 'the name of the party', nonEmpty),
  )
    .addHelpText('after', HELP_FOOTER)
    .action((opts: { iban: string; name: string; retries?: number }) =>
      withSession(ctx, opts.retries, async ({ client, call, print }) =>
        print(await client.verify({ iban: opts.iban, party: { name: opts.name } }, call)),
      ),
    );
}
