import { onTestFinished } from 'vitest';
import { createSandbox, type SandboxOptions, sandboxUpstreamEnv } from '../../src/sandbox/index.ts';
import { stackEnv } from './stack.ts';

/**
 * A sandbox started for one test (stopped when it ends): no changes, no rate limit unless `options`
 * say otherwise. `env` points a component at it and at the test stack, its ops server on a free port.
 */
export async function testSandbox(options: SandboxOptions) {
  const sandbox = createSandbox({ port: 0, changesPerSec: 0, rateLimit: 0, ...options });
  const { url } = await sandbox.start();
  onTestFinished(() => sandbox.stop());
  const env = { ...stackEnv(), ...sandboxUpstreamEnv(url), HTTP_PORT: '0', HTTP_HOST: '127.0.0.1' };
  return { sandbox, env };
}
