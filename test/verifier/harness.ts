import { onTestFinished } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { createVerificationClient } from '../../src/requester/index.ts';
import { createSandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { runCli } from '../helpers/cli.ts';
import { collect, testClients } from '../helpers/kafka.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

/**
 * Topic settings for the harness to create its topics with; `dlq: false` leaves the DLQ topic for
 * the verifier to create.
 */
export interface HarnessTopics {
  requests?: Record<string, string>;
  replies?: Record<string, string>;
  dlq?: Record<string, string> | false;
}

/** A sandbox, unique topics and group, and the environment of a verifier pointed at them. */
export async function verifierHarness(sandboxOptions: SandboxOptions = {}, topics: HarnessTopics = {}) {
  const sandbox = createSandbox({ port: 0, alerts: 50, changesPerSec: 0, rateLimit: 0, ...sandboxOptions });
  const { url } = await sandbox.start();
  onTestFinished(() => sandbox.stop());
  const prefix = uniqueName('vop').replace(/\./g, '-');
  const env = {
    ...stackEnv(),
    API_BASE_URL: url,
    // The sandbox marks its answers; without this the component refuses it as its upstream.
    ALLOW_SANDBOX_UPSTREAM: 'true',
    API_KEY: 'sandbox-key',
    VERIFY_REQUESTS_TOPIC: `${prefix}.requests`,
    VERIFY_REPLIES_TOPIC: `${prefix}.replies.default`,
    VERIFY_DLQ_TOPIC: `${prefix}.dlq`,
    VERIFY_GROUP_ID: `${prefix}-group`,
    VERIFY_REPLY_TOPICS: `^${prefix}\\.replies\\..*`,
    VERIFY_TOPIC_PARTITIONS: '3',
    VERIFY_DEFAULT_DEADLINE_MS: '5000',
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
  };
  const config = loadVerifierConfig(env);
  const { kafka, registry } = testClients();
  const admin = await kafka.admin();
  const created = [
    { topic: config.verifier.requestsTopic, configs: topics.requests ?? {} },
    { topic: config.verifier.repliesTopic, configs: topics.replies ?? {} },
    ...(topics.dlq === false ? [] : [{ topic: config.verifier.dlqTopic, configs: topics.dlq ?? {} }]),
    { topic: `${prefix}.replies.custom`, configs: {} },
  ];
  await admin.provisionTopics(created.map((t) => ({ ...t, partitions: 3, replicationFactor: 1 })));
  onTestFinished(async () => {
    await admin
      .deleteTopics([
        config.verifier.requestsTopic,
        config.verifier.repliesTopic,
        config.verifier.dlqTopic,
        `${prefix}.replies.custom`,
      ])
      .catch(() => {});
    await admin.close();
  });
  const start = (instance = 'one', extraEnv: Record<string, string> = {}) =>
    runCli(['verifier', '--instance-id', instance], { ...env, ...extraEnv });
  return {
    sandbox,
    env,
    config,
    kafka,
    admin,
    registry,
    prefix,
    customReplyTopic: `${prefix}.replies.custom`,
    start,
    /**
     * A verifier started with SCHEMA_REGISTRY_URL at `registryUrl` (a proxy of the registry), with
     * a producer, readers of its default and custom reply topics, and an Avro encoder of requests.
     */
    async startedThrough(registryUrl: string) {
      const producer = await kafka.producer();
      onTestFinished(() => producer.close());
      const replies = await collect(kafka, config.verifier.repliesTopic);
      const custom = await collect(kafka, `${prefix}.replies.custom`);
      const verifier = start('one', { SCHEMA_REGISTRY_URL: registryUrl });
      await verifier.logLine((l) => l.msg === 'verifier started');
      const encoder = await registry.encoder(
        config.verifier.requestsTopic,
        loadSchema(SchemaNames.VerificationRequest),
      );
      return { producer, replies, custom, verifier, encoder };
    },
    async client(format: 'avro' | 'json' = 'avro', replyTopic = config.verifier.repliesTopic) {
      const client = createVerificationClient({
        kafka: config.kafka,
        registry: config.registry,
        requestsTopic: config.verifier.requestsTopic,
        replyTopic,
        format,
      });
      onTestFinished(() => client.close());
      await client.ready();
      return client;
    },
  };
}

export const header = (r: IncomingRecord, name: string) => r.headers[name]?.toString();

/** A `kafka_replyPartition` header as Spring's template writes it: a 4-byte big-endian int. */
export function replyPartitionHeader(partition: number): Buffer {
  const header = Buffer.alloc(4);
  header.writeInt32BE(partition);
  return header;
}
