import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { Command } from 'commander';
import { loadReplayConfig } from '../../config/index.ts';
import { AbortedError, OutputError, UsageError } from '../../errors.ts';
import { createLogger } from '../../logger.ts';
import type { AlertState } from '../../replay/index.ts';
import type { CliContext } from '../context.ts';
import { untilSignal } from '../options.ts';

function summaryOf(
  alerts: ReadonlyMap<string, AlertState>,
  deactivated: number,
  events: number,
  skipped: number,
) {
  const byQualification: Record<string, number> = {};
  for (const a of alerts.values())
    byQualification[a.qualification] = (byQualification[a.qualification] ?? 0) + 1;
  return { active: alerts.size, deactivatedEvents: deactivated, events, skipped, byQualification };
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

export function registerReplayCommand(program: Command, ctx: CliContext): void {
  program
    .command('replay')
    .description('rebuild the current alert table from the compacted alerts topic (JSON Lines or a summary)')
    .option('--follow', 'keep applying new events after the snapshot, one JSON line per change')
    .option('--summary', 'print counts by qualification instead of the alerts')
    .option('--out <file>', 'write to this file instead of stdout')
    .option(
      '--skip-undecodable',
      'skip records that cannot be decoded or are not alert events (reported on stderr) instead of stopping',
    )
    .addHelpText(
      'after',
      '\nReads ALERTS_TOPIC (read_committed) with KAFKA_BROKERS and SCHEMA_REGISTRY_URL. Progress on stderr when it is a terminal.',
    )
    .action(
      async (opts: { follow?: boolean; summary?: boolean; out?: string; skipUndecodable?: boolean }) => {
        const config = loadReplayConfig(ctx.env);
        const logger = createLogger({ level: config.logLevel });
        const [{ replayAlerts }, { default: cliProgress }] = await Promise.all([
          import('../../replay/index.ts'),
          import('cli-progress'),
        ]);
        const out: NodeJS.WritableStream = opts.out ? await openOut(opts.out) : ctx.stdout;
        const controller = new AbortController();
        // A reader that goes away (`| head`) ends replay quietly, as it ends `fraudlink api`; any
        // other write failure (a full disk) ends it with an OutputError. Either way --follow stops.
        let outputClosed = false;
        let outputFailure: OutputError | undefined;
        const onOutputError = (err: NodeJS.ErrnoException) => {
          if (err.code === 'EPIPE') outputClosed = true;
          else
            outputFailure ??= new OutputError(`writing to ${opts.out ?? 'stdout'} failed: ${err.message}`, {
              cause: err,
            });
          controller.abort();
        };
        out.on('error', onOutputError);
        const write = async (line: string) => {
          if (outputClosed || outputFailure) return;
          // An error instead of 'drain' rejects once(): onOutputError has recorded it.
          if (!out.write(`${line}\n`)) await once(out, 'drain').catch(() => {});
        };
        const bar = ctx.stderr.isTTY
          ? new cliProgress.SingleBar(
              {
                stream: ctx.stderr as NodeJS.WriteStream,
                format: 'replay [{bar}] {value}/{total} offsets | {rate}/s | ETA {eta}s',
                hideCursor: true,
              },
              cliProgress.Presets.shades_classic,
            )
          : undefined;
        const started = Date.now();
        let barStarted = false;
        if (opts.follow) void untilSignal().then(() => controller.abort());
        let pending: Promise<void> = Promise.resolve();
        const replaying = replayAlerts(
          { kafka: config.kafka, registry: config.registry, alertsTopic: config.alertsTopic },
          {
            logger,
            signal: controller.signal,
            ...(opts.skipUndecodable && { skipUndecodable: true }),
            ...(opts.follow && { follow: true }),
            onProgress: ({ read, total }) => {
              if (!bar) return;
              if (!barStarted) {
                bar.start(Number(total), 0, { rate: 0 });
                barStarted = true;
              }
              const seconds = Math.max(0.001, (Date.now() - started) / 1000);
              bar.update(Number(read), { rate: Math.round(Number(read) / seconds) });
            },
            onSnapshot: (alerts, counts) => {
              bar?.stop();
              if (opts.summary) {
                const summary = summaryOf(alerts, counts.deactivated, counts.events, counts.skipped);
                pending = pending.then(() => write(JSON.stringify(summary)));
              } else {
                pending = pending.then(async () => {
                  for (const alert of alerts.values()) await write(JSON.stringify(alert));
                });
              }
            },
            onChange: (change) => {
              pending = pending.then(() => write(JSON.stringify(change)));
            },
          },
        );
        const result = await replaying.catch((err: unknown) => {
          // Aborted because the output broke: that, not the abort, is what happened.
          if (err instanceof AbortedError && (outputClosed || outputFailure)) return undefined;
          throw err;
        });
        bar?.stop();
        await pending;
        if (out !== ctx.stdout) await new Promise<void>((resolve) => out.end(() => resolve()));
        if (outputFailure) throw outputFailure;
        if (!result) return;
        logger.info(
          {
            active: result.alerts.size,
            events: result.events,
            skipped: result.skipped,
            ms: Date.now() - started,
          },
          'replay done',
        );
      },
    );
}
