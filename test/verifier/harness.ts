import { onTestFinished } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { clientConfigOf, createVerificationClient } from '../../src/requester/index.ts';
import type { SandboxOptions } from '../../src/sandbox/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { runCli } from '../helpers/cli.ts';
import { collect, testClients, testProducer } from '../helpers/kafka.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { uniqueName, verifierNamesEnv } from '../helpers/stack.ts';

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
  const { sandbox, env: sandboxEnv } = await testSandbox({ alerts: 50, ...sandboxOptions });
  const prefix = uniqueName('vop').replace(/\./g, '-');
  const env = {
    ...sandboxEnv,
    ...verifierNamesEnv(prefix),
    VERIFY_TOPIC_PARTITIONS: '3',
    VERIFY_DEFAULT_DEADLINE_MS: '5000',
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
  /** `start`, resolved once the verifier has started. */
  const started = async (instance = 'one', extraEnv: Record<string, string> = {}) => {
    const verifier = start(instance, extraEnv);
    await verifier.logLine((l) => l.msg === 'verifier started');
    return verifier;
  };
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
    started,
    /** A producer, and readers of the DLQ and the default reply topic: made before a start, they see all it writes. */
    async observers() {
      const producer = await testProducer(kafka);
      const dlq = await collect(kafka, config.verifier.dlqTopic);
      const replies = await collect(kafka, config.verifier.repliesTopic);
      return { producer, dlq, replies };
    },
    /**
     * A verifier started with SCHEMA_REGISTRY_URL at `registryUrl` (a proxy of the registry), with
     * a producer, readers of its default and custom reply topics, and an Avro encoder of requests.
     */
    async startedThrough(registryUrl: string) {
      const producer = await testProducer(kafka);
      const replies = await collect(kafka, config.verifier.repliesTopic);
      const custom = await collect(kafka, `${prefix}.replies.custom`);
      const verifier = await started('one', { SCHEMA_REGISTRY_URL: registryUrl });
      const encoder = await registry.encoder(
        config.verifier.requestsTopic,
        loadSchema(SchemaNames.VerificationRequest),
      );
      return { producer, replies, custom, verifier, encoder };
    },
    async client(format: 'avro' | 'json' = 'avro', replyTopic = config.verifier.repliesTopic) {
      const client = createVerificationClient({ ...clientConfigOf(config), replyTopic, format });
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
