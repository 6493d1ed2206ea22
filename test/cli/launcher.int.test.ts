import { describe, expect, it, onTestFinished } from 'vitest';
import { verifierHarness } from '../verifier/harness.ts';
import { asPid1, launch } from './launch.ts';

describe(`bin/fraudlink.js with a real broker (${asPid1 ? 'as PID 1' : 'as a child'})`, () => {
  // As PID 1 the second signal was dropped (the command had let go of the first's listener), and the
  // stop ran its course. Outside PID 1 it killed the process. The verifier's stop waits here for a
  // verification the upstream holds.
  it('ends a graceful stop at once with 128 + the number of a second signal', async () => {
    const h = await verifierHarness({ faults: { latencyMs: 600_000 } });
    const cli = launch(['verifier', '--instance-id', 'second-signal'], { ...h.env, LOG_LEVEL: 'debug' });
    cli.child.stdin.end();
    await cli.line('verifier started');
    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send([
      {
        topic: h.config.verifier.requestsTopic,
        key: 'held-1',
        value: Buffer.from(
          JSON.stringify({
            requestId: 'held-1',
            iban: 'DE89370400440532013000',
            partyName: 'Anna',
            requestedAt: Date.now(),
          }),
        ),
        headers: { 'content-type': 'application/json' },
      },
    ]);
    await cli.line('asking upstream');
    process.kill(cli.nodePid(), 'SIGTERM');
    await cli.line('stopping: draining in-flight verifications');
    process.kill(cli.nodePid(), 'SIGINT');
    expect(await cli.exited).toBe(130);
  });
});
