import type { TestProject } from 'vitest/node';
import { createLogger } from '../../src/logger.ts';
import { findRunningStack, type Stack, startStack } from '../../src/stack/stack.ts';
import { dockerAvailable, startContainers } from './containers.ts';

/**
 * Gives the integration tests a real Kafka broker and schema registry, in this order of preference:
 * KAFKA_BROKERS + SCHEMA_REGISTRY_URL from the environment; the stack of `npm run stack -- up`;
 * containers where a Docker engine answers; else a JVM stack owned by this test run, which dies with
 * it even when the run is killed.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const provide = (brokers: string, registry: string) => {
    project.provide('kafkaBrokers', brokers);
    project.provide('schemaRegistryUrl', registry);
  };
  const { KAFKA_BROKERS: brokers, SCHEMA_REGISTRY_URL: registry } = process.env;
  if (brokers && registry) {
    provide(brokers, registry);
    return async () => {};
  }
  const running = await findRunningStack();
  if (running) {
    provide(running.brokers, running.registryUrl);
    return async () => {};
  }
  const started = Date.now();
  let stack: Pick<Stack, 'brokers' | 'registryUrl' | 'stop'>;
  if (await dockerAvailable()) {
    stack = await startContainers();
  } else {
    stack = await startStack({ ownerPid: process.pid, logger });
  }
  process.stderr.write(
    `integration stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${stack.brokers} ${stack.registryUrl}\n`,
  );
  provide(stack.brokers, stack.registryUrl);
  return () => stack.stop();
}
