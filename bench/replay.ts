// Replay: decoding and applying a topic of 1,000,000 alert events, beside bare kafkajs consumers
// (stock, and with fraudlink's kafkajs fixes) reading the same topic without decoding, in
// alternating rounds of one run.
import { randomUUID } from 'node:crypto';
import { replayAlerts } from '../src/replay/index.ts';
import { writeAlertTopic } from './alert-events.ts';
import { benchStack, fmt, median, runBare } from './common.ts';
import { countEnv } from './env.ts';

export async function run(): Promise<void> {
  const events = countEnv('BENCH_EVENTS', 1_000_000);
  const ibans = countEnv('BENCH_IBANS', 50_000);
  const rounds = countEnv('BENCH_ROUNDS', 3);
  const stack = await benchStack();
  const { topic, remove } = await writeAlertTopic(
    stack,
    `bench.replay.${randomUUID().slice(0, 8)}`,
    events,
    ibans,
  );

  // Bare kafkajs consumers, no decoding, each in a process of its own (bench/bare-consumer.ts): stock
  // kafkajs (the target's baseline), and kafkajs with fraudlink's fixes (replay's overhead over its
  // own client).
  const bareRead = async (fixes: boolean): Promise<number> => {
    const { rate } = await runBare<{ rate: number }>('./bare-consumer.ts', {
      BARE_BROKERS: stack.brokers,
      BARE_TOPIC: topic,
      BARE_EVENTS: String(events),
      BARE_KAFKAJS_FIXES: fixes ? '1' : '0',
    });
    return rate;
  };
  const replayRead = async () => {
    const started = performance.now();
    const result = await replayAlerts({
      kafka: { brokers: [stack.brokers], clientId: 'bench', ssl: false },
      registry: { url: stack.registryUrl },
      alertsTopic: topic,
    });
    return { rate: events / ((performance.now() - started) / 1000), result };
  };

  // Rounds alternate the readers, so that none has the machine to itself for long; each round's
  // figures are printed, and the median of the rounds' ratios is the figure.
  const ratios: number[] = [];
  const ownRatios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const bare = await bareRead(false);
    const fixed = await bareRead(true);
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const { rate: replay, result } = await replayRead();
    ratios.push(replay / bare);
    ownRatios.push(replay / fixed);
    let held = '';
    if (round === 1) {
      // Measured once: a later round's table replaces one that may not have been collected yet.
      global.gc?.();
      const mb = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;
      held = `; heap held by the table: ${mb.toFixed(1)} MB for ${fmt(result.alerts.size)} alerts (${fmt(events)} events)`;
    }
    console.log(
      `round ${round}: bare kafkajs consumer (no decoding) ${fmt(bare)} records/s stock, ${fmt(fixed)} with fraudlink's kafkajs fixes; replayAlerts (decode + apply) ${fmt(replay)} events/s; ratio ${(replay / bare).toFixed(2)} (${(replay / fixed).toFixed(2)} against the fixed client)${held}`,
    );
  }
  console.log(
    `ratio replay / bare stock kafkajs, median of ${rounds} rounds: ${median(ratios).toFixed(2)} (target >= 0.60); against the fixed client: ${median(ownRatios).toFixed(2)}`,
  );
  await remove();
  await stack.stop();
}

if (import.meta.main) await run();
