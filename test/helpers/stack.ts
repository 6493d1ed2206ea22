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

/** The topics and name of a connector, all named after `prefix`. */
export function connectorNamesEnv(prefix: string) {
  return {
    ALERTS_TOPIC: `${prefix}.alerts`,
    ALERTS_DLQ_TOPIC: `${prefix}.dlq`,
    CONNECTOR_OFFSETS_TOPIC: `${prefix}.offsets`,
    CONNECTOR_NAME: prefix,
  };
}

/** The topics, group and reply allow-list of a verifier, all named after `prefix`. */
export function verifierNamesEnv(prefix: string, dlqTopic = `${prefix}.dlq`) {
  return {
    VERIFY_REQUESTS_TOPIC: `${prefix}.requests`,
    VERIFY_REPLIES_TOPIC: `${prefix}.replies.default`,
    VERIFY_DLQ_TOPIC: dlqTopic,
    VERIFY_GROUP_ID: `${prefix}-group`,
    VERIFY_REPLY_TOPICS: `^${prefix}\\.replies\\..*`,
  };
}
