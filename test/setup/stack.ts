import type { TestProject } from 'vitest/node';

// Placeholder until the stack launcher lands: uses an already-running cluster from the environment.
export default function setup(project: TestProject): void {
  const brokers = process.env.KAFKA_BROKERS;
  const registry = process.env.SCHEMA_REGISTRY_URL;
  if (!brokers || !registry) {
    throw new Error('set KAFKA_BROKERS and SCHEMA_REGISTRY_URL to a running cluster');
  }
  project.provide('kafkaBrokers', brokers);
  project.provide('schemaRegistryUrl', registry);
}
