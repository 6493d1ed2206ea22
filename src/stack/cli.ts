import { Command } from 'commander';
import { createLogger } from '../logger.ts';
import { defaultStateFile, down, probeRunningStack, up } from './stack.ts';

// `npm run stack -- up|down|status`: a local Kafka + schema registry for humans, kept running
// between commands until `down`.
const program = new Command('stack')
  .description('local Kafka broker + schema registry for development')
  .option('--state <file>', 'where the running stack is recorded', defaultStateFile());
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'info' });
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
// A reader that goes away (`status | head -1`) is no failure: the rest of the output is dropped.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

program
  .command('up')
  .description('start the stack, or reuse the one already running')
  .action(async () => {
    const { stack, reused } = await up(logger, program.opts().state);
    const { stop: _stop, ...info } = stack;
    print({ reused, ...info, env: { KAFKA_BROKERS: stack.brokers, SCHEMA_REGISTRY_URL: stack.registryUrl } });
  });
program
  .command('down')
  .description('stop the stack and remove its data')
  .action(async () => {
    const info = await down(program.opts().state);
    print(
      info ? { stopped: true, kafkaPid: info.kafkaPid, registryPid: info.registryPid } : { stopped: false },
    );
  });
program
  .command('status')
  .description('show whether the stack runs and where')
  .action(async () => {
    const running = await probeRunningStack(program.opts().state);
    if (!running) {
      print({ running: false });
      process.exitCode = 1;
      return;
    }
    const { stop: _stop, ...info } = running.stack;
    print({ running: true, outdated: running.outdated, ...info });
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  logger.error({ err }, 'stack command failed');
  process.exitCode = 1;
});
