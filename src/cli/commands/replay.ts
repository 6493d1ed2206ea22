import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Command } from 'commander';
import { loadReplayConfig } from '../../config/index.ts';
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

export function registerReplayCommand(program: Command, ctx: CliContext): void {
  program
    .command('replay')
    .description('rebuild the current alert table from the compacted alerts topic (JSON Lines or a summary)')
    .option('--follow', 'keep applying new events after the snapshot, one JSON line per change')
    .option('--summary', 'print counts by qualification instead of the alerts')
    .option('--out <file>', 'write to this file instead of stdout')
    .option(
      '--skip-undecodable',
      'skip records that cannot be decoded (reported on stderr) instead of stopping',
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
        const out = opts.out ? createWriteStream(opts.out) : ctx.stdout;
        const write = async (line: string) => {
          if (!out.write(`${line}\n`)) await once(out, 'drain');
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
        const controller = new AbortController();
        if (opts.follow) void untilSignal().then(() => controller.abort());
        let pending: Promise<void> = Promise.resolve();
        const result = await replayAlerts(
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
        bar?.stop();
        await pending;
        if (out !== ctx.stdout)
          await new Promise<void>((resolve) => (out as NodeJS.WritableStream).end(resolve));
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
