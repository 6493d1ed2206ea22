import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';

/** The environment variables that point fraudlink at the test run's real broker and registry. */
export function stackEnv(): { KAFKA_BROKERS: string; SCHEMA_REGISTRY_URL: string } {
  return { KAFKA_BROKERS: inject('kafkaBrokers'), SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl') };
}

/** A topic, group or id name no other test uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}.${randomUUID().slice(0, 8)}`;
}
