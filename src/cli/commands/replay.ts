import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import type CliProgress from 'cli-progress';
import type { Command } from 'commander';
import { loadReplayConfig } from '../../config/index.ts';
import { AbortedError, OutputError, UsageError } from '../../errors.ts';
import { maskIban } from '../../logger.ts';
import type { AlertState, ReplayOptions } from '../../replay/index.ts';
import type { CliContext } from '../context.ts';
import { abortOnSignal, commandLogger, cutShort, nonEmpty } from '../options.ts';

interface ReplayFlags {
  follow?: boolean;
  summary?: boolean;
  out?: string;
  skipUndecodable?: boolean;
}

function summaryOf(
  alerts: ReadonlyMap<string, AlertState>,
  deactivated: number,
  events: number,
  skipped: number,
  uncertain: number,
) {
  const byQualification: Record<string, number> = {};
  for (const a of alerts.values())
    byQualification[a.qualification] = (byQualification[a.qualification] ?? 0) + 1;
  return { active: alerts.size, deactivatedEvents: deactivated, events, skipped, uncertain, byQualification };
}

/** Opens --out before anything is read, so that a path that cannot be written is a usage error. */
async function openOut(path: string): Promise<WriteStream> {
  const stream = createWriteStream(path);
  try {
    await once(stream, 'open');
  } catch (err) {
    throw new UsageError(`--out ${path} cannot be written: ${(err as Error).message}`, { cause: err });
  }
  return stream;
}

/**
 * Replay's output, stdout or --out. A reader that goes away (`| head`) ends replay quietly, as it
 * ends `fraudlink api`; any other write failure (a full disk) ends it with an OutputError. Either
 * way `stop` is aborted, to stop the read or --follow, and nothing more is written. A write waiting
 * for a slow reader to drain returns when `stop` aborts (a signal).
 */
async function openOutput(ctx: CliContext, path: string | undefined, stop: AbortController) {
  const out: NodeJS.WritableStream = path ? await openOut(path) : ctx.stdout;
  let closed = false;
  let failure: OutputError | undefined;
  out.on('error', (err: NodeJS.ErrnoException) => {
    if (closed || failure) return;
    if (err.code === 'EPIPE') closed = true;
    else failure = new OutputError(`writing to ${path ?? 'stdout'} failed: ${err.message}`, { cause: err });
    stop.abort();
  });
  return {
    broken: () => closed || failure !== undefined,
    async write(line: string): Promise<void> {
      if (closed || failure) return;
      // An error instead of 'drain' rejects once(): the listener above has recorded it.
      if (!out.write(`${line}\n`)) await once(out, 'drain', { signal: stop.signal }).catch(() => {});
    },
    /** Ends a file; rejects with the write failure, if any. */
    async finish(): Promise<void> {
      if (out !== ctx.stdout) await new Promise<void>((resolve) => out.end(() => resolve()));
      if (failure) throw failure;
    },
  };
}

/** A progress bar on stderr, only when stderr is a terminal. */
function progressBar(ctx: CliContext, cliProgress: typeof CliProgress) {
  if (!ctx.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: ctx.stderr as NodeJS.WriteStream,
      format: 'replay [{bar}] {value}/{total} offsets | {rate}/s | ETA {eta}s',
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let barStarted = false;
  return {
    update(read: bigint, total: bigint) {
      if (!barStarted) {
        bar.start(Number(total), 0, { rate: 0 });
        barStarted = true;
      }
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      bar.update(Number(read), { rate: Math.round(Number(read) / seconds) });
    },
    /** Also shows the terminal's cursor again. */
    stop: () => bar.stop(),
  };
}

async function replayCommand(ctx: CliContext, opts: ReplayFlags): Promise<void> {
  const config = loadReplayConfig(ctx.env);
  const logger = commandLogger(config);
  const [{ replayAlerts }, { default: cliProgress }] = await Promise.all([
    import('../../replay/index.ts'),
    import('cli-progress'),
  ]);
  const controller = new AbortController();
  const output = await openOutput(ctx, opts.out, controller);
  const bar = progressBar(ctx, cliProgress);
  // SIGINT or SIGTERM stops the read, the printing or the follow. Before the table (or summary) is
  // printed in full, the command was cut short (exit 128 + n, with a warning saying what is
  // missing); after, it stops as --follow's service does, with exit 0.
  const signals = abortOnSignal(controller);
  const started = Date.now();
  // How far the snapshot got, for a stop before it was printed.
  let snapshotTaken = false;
  let snapshotPrinted = false;
  let progress: { read: bigint; total: bigint } | undefined;
  let pending: Promise<void> = Promise.resolve();
  const print = (line: () => string) => {
    pending = pending.then(() => output.write(line()));
  };
  const options: ReplayOptions = {
    logger,
    signal: controller.signal,
    ...(opts.skipUndecodable && { skipUndecodable: true }),
    ...(opts.follow && { follow: true }),
    onProgress: (reached) => {
      progress = reached;
      bar.update(reached.read, reached.total);
    },
    onSnapshot: (alerts, counts) => {
      snapshotTaken = true;
      bar.stop();
      pending = pending.then(async () => {
        if (opts.summary)
          await output.write(
            JSON.stringify(
              summaryOf(alerts, counts.deactivated, counts.events, counts.skipped, counts.uncertain),
            ),
          );
        else
          for (const alert of alerts.values()) {
            // Stopped by a signal or by the output: the rest of the table is not printed.
            if (controller.signal.aborted) return;
            await output.write(JSON.stringify(alert));
          }
        snapshotPrinted = true;
      });
    },
    // Awaited by the read: a reader slower than the topic holds it back, and memory stays flat.
    onChange: (change) => {
      print(() => JSON.stringify(change));
      return pending;
    },
  };
  try {
    const result = await replayAlerts(
      { kafka: config.kafka, registry: config.registry, alertsTopic: config.alertsTopic },
      options,
    ).catch((err: unknown) => {
      // Stopped by a signal or by its output: that, not the abort, is what happened.
      if (err instanceof AbortedError && (signals.received() || output.broken())) return undefined;
      throw err;
    });
    await pending;
    await output.finish();
    const signal = signals.received();
    if (signal && !snapshotPrinted) {
      // An empty or partial table would otherwise read as the topic's active alerts.
      cutShort(
        ctx,
        logger,
        signal,
        snapshotTaken
          ? 'the alert table was printed in part'
          : 'the end of the topic was not reached and the alert table was not printed',
        {
          topic: config.alertsTopic,
          ...(progress && { offsetsRead: Number(progress.read), offsetsTotal: Number(progress.total) }),
        },
      );
    } else if (result) {
      const { alerts, events, skipped, uncertain } = result;
      logger.info(
        { active: alerts.size, events, skipped, uncertain: uncertain.size, ms: Date.now() - started },
        'replay done',
      );
      if (uncertain.size > 0)
        logger.warn(
          { uncertain: uncertain.size, ibans: [...uncertain].slice(0, 20).map(maskIban) },
          'the latest record of some IBANs was skipped as undecodable: their state in the table may be out of date',
        );
    }
  } finally {
    bar.stop();
    signals.release();
  }
}

export function registerReplayCommand(program: Command, ctx: CliContext): void {
  program
    .command('replay')
    .description('rebuild the current alert table from the compacted alerts topic (JSON Lines or a summary)')
    .option('--follow', 'keep applying new events after the snapshot, one JSON line per change')
    .option('--summary', 'print counts by qualification instead of the alerts')
    .option('--out <file>', 'write to this file instead of stdout', nonEmpty)
    .option(
      '--skip-undecodable',
      'skip records that cannot be decoded or are not alert events, and record batches that cannot be read (each reported on stderr), instead of stopping',
    )
    .addHelpText(
      'after',
      '\nReads ALERTS_TOPIC (read_committed) with KAFKA_BROKERS and SCHEMA_REGISTRY_URL. Progress on stderr when it is a terminal. SIGINT or SIGTERM stops it. Before the table (or summary) is printed in full, it exits 130 or 143 with a warning on stderr saying what is missing; with --follow, once the table is printed, it exits 0.',
    )
    .action((opts: ReplayFlags) => replayCommand(ctx, opts));
}
