import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

/** `fraudlink <args>` to its end, its output read in full ('close', not 'exit'). */
async function fraudlink(args: string[], env: Record<string, string>) {
  const cli = runCli(args, env);
  const [code] = await once(cli.child, 'close');
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

describe('fraudlink connector status and reset against a real broker', () => {
  // Both refused to run, exit 2 "API_BASE_URL: is required; API_KEY: is required": a Job resetting
  // the cursor needed the API secret, and the registry, for a JSON record on Kafka.
  it('read and rewrite the cursor with the Kafka variables alone, no API key or registry', async () => {
    const { kafka } = testClients();
    const [offsetsTopic] = await testTopics(kafka, ['cli.offsets'], 1, { 'cleanup.policy': 'compact' });
    const name = uniqueName('cli-cursor');
    const env = {
      KAFKA_BROKERS: stackEnv().KAFKA_BROKERS,
      CONNECTOR_OFFSETS_TOPIC: offsetsTopic as string,
      CONNECTOR_NAME: name,
    };

    const before = await fraudlink(['connector', 'status'], env);
    expect(before.code).toBe(0);
    expect(JSON.parse(before.stdout)).toEqual({ connector: name, cursor: null, stored: false });

    const reset = await fraudlink(['connector', 'reset', '--updated-after', '2026-01-01T00:00:00Z'], env);
    expect(reset.code).toBe(0);
    expect(JSON.parse(reset.stdout)).toMatchObject({ exportStart: '2026-01-01T00:00:00.000Z' });

    const after = await fraudlink(['connector', 'status'], env);
    expect(after.code).toBe(0);
    expect(JSON.parse(after.stdout)).toEqual(JSON.parse(reset.stdout));
  });
});
