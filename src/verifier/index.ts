import { hostname } from 'node:os';
import { LRUCache } from 'lru-cache';
import { Registry } from 'prom-client';
import { createApiClient } from '../api/index.ts';
import type { VerifierConfig } from '../config/index.ts';
import { createKafkaClient, createSchemaRegistry, type Encoder } from '../kafka/index.ts';
import type { Logger } from '../logger.ts';
import { startOpsServerFirst } from '../observability/http-server.ts';
import { loadSchema, SchemaNames } from '../schemas.ts';
import { type StartOptions, type StartUpSteps, startUp } from '../start-up.ts';
import { createVerifierMetrics } from './metrics.ts';
import { cachedPartitionCounts } from './partition-counts.ts';
import type { VerificationResult } from './reply.ts';
import { createVerifier, type Verifier } from './verifier.ts';

/** How long a reply topic's partition count is trusted before it is read again. */
const PARTITION_COUNT_TTL_MS = 60_000;
/** Room in a DLQ record for the headers added to a request (error, source), with ample margin. */
const DLQ_HEADROOM_BYTES = 16 * 1024;
/** Kafka's `message.max.bytes` default (1 MiB + 12), and the largest value a topic config takes. */
const BROKER_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;
const INT32_MAX = 2 ** 31 - 1;
/**
 * How many custom reply topics' encoders are kept, the least recently used dropped first (made
 * again, a registry call, on its next reply): the topics are the requesters' choice. The default
 * reply topic's encoder is kept apart, always.
 */
export const REPLY_ENCODER_CACHE_MAX = 1000;

export type { VerificationResult } from './reply.ts';

export interface RunningVerifier {
  done: Promise<void>;
  opsUrl: string;
  stop(): Promise<void>;
}

export interface StartVerifierOptions extends StartOptions {
  /** Stable id of this instance, the suffix of its transactional ids; default the host name. */
  instanceId?: string;
}

/**
 * Wires the verifier: topics, schemas, API client, Kafka consumer + transactional producer, ops
 * endpoints. `signal` ends start-up at once (AbortedError), what it had created released; once
 * started, stop().
 */
export async function startVerifier(
  config: VerifierConfig,
  logger: Logger,
  { instanceId = hostname(), signal }: StartVerifierOptions = {},
): Promise<RunningVerifier> {
  return startUp(signal, (steps) => wire(config, logger, instanceId, steps), {
    logger: logger.child({ component: 'verifier' }),
  });
}

/** startVerifier's steps: each one the stop signal ends, or taking it. */
async function wire(
  config: VerifierConfig,
  logger: Logger,
  instanceId: string,
  steps: StartUpSteps,
): Promise<RunningVerifier> {
  const { signal, created, outlasting } = steps;
  const log = logger.child({ component: 'verifier' });
  const v = config.verifier;
  const metricsRegistry = new Registry();
  const metrics = createVerifierMetrics(metricsRegistry);
  let wired: Verifier | undefined;
  const { ops, url } = await startOpsServerFirst(steps, config.http, {
    registry: metricsRegistry,
    healthy: () => wired?.healthy() ?? true,
    ready: () => wired?.ready(),
    logger: log,
  });
  const kafka = createKafkaClient({ config: config.kafka, logger });
  const admin = created(
    await outlasting('connecting to Kafka', 'Kafka', () => kafka.admin({ signal })),
    (a) => a.close(),
  );
  await outlasting('provisioning the topics', 'Kafka', () =>
    admin.provisionTopics([
      {
        topic: v.requestsTopic,
        partitions: v.partitions,
        replicationFactor: v.replicationFactor,
        configs: {},
      },
      {
        topic: v.repliesTopic,
        partitions: v.partitions,
        replicationFactor: v.replicationFactor,
        configs: {},
      },
    ]),
  );
  // An unreadable request goes to the DLQ unchanged with headers added: a DLQ created here takes a
  // little more than the largest request, so that any request the requests topic took uncompressed
  // fits (DLQ copies go with KAFKA_COMPRESSION's codec, none by default). Never less than the
  // broker's default: several copies share one record batch of up to ~900 kB (MAX_SEND_BYTES). At
  // most Kafka's int32 limit.
  const requestsMaxBytes = await outlasting("reading the requests topic's max.message.bytes", 'Kafka', () =>
    admin.maxMessageBytes(v.requestsTopic),
  );
  const wantedDlqBytes = Math.min(
    Math.max(requestsMaxBytes + DLQ_HEADROOM_BYTES, BROKER_DEFAULT_MAX_MESSAGE_BYTES),
    INT32_MAX,
  );
  await outlasting('provisioning the DLQ topic', 'Kafka', () =>
    admin.provisionTopics([
      {
        topic: v.dlqTopic,
        partitions: 1,
        replicationFactor: v.replicationFactor,
        configs: {},
        createConfigs: { 'max.message.bytes': String(wantedDlqBytes) },
      },
    ]),
  );
  const dlqMaxBytes = await outlasting("reading the DLQ topic's max.message.bytes", 'Kafka', () =>
    admin.maxMessageBytes(v.dlqTopic),
  );
  if (dlqMaxBytes < wantedDlqBytes) {
    log.warn(
      { dlqTopic: v.dlqTopic, dlqMaxBytes, requestsMaxBytes, wanted: wantedDlqBytes },
      'the DLQ topic takes smaller records than the requests topic plus the DLQ headers: the DLQ ' +
        "copy of an unreadable request that large is cut down; raise the DLQ topic's max.message.bytes",
    );
  }
  const registry = createSchemaRegistry(config.registry);
  await outlasting('registering the request schema', 'the schema registry', () =>
    registry.encoder(v.requestsTopic, loadSchema(SchemaNames.VerificationRequest)),
  );
  const encoderOf = (topic: string) =>
    registry.encoder<VerificationResult>(topic, loadSchema(SchemaNames.VerificationResult));
  const defaultEncoder = await outlasting('registering the reply schema', 'the schema registry', () =>
    encoderOf(v.repliesTopic),
  );
  const encoders = new LRUCache<string, Promise<Encoder<VerificationResult>>>({
    max: REPLY_ENCODER_CACHE_MAX,
  });
  const replyEncoder = (topic: string) => {
    if (topic === v.repliesTopic) return Promise.resolve(defaultEncoder);
    let encoder = encoders.get(topic);
    if (!encoder) {
      encoder = encoderOf(topic);
      encoder.catch(() => {
        if (encoders.get(topic) === encoder) encoders.delete(topic);
      });
      encoders.set(topic, encoder);
    }
    return encoder;
  };
  const partitionCount = cachedPartitionCounts(
    (topic) => admin.partitionCount(topic),
    PARTITION_COUNT_TTL_MS,
  );
  const api = createApiClient({
    baseUrl: config.api.baseUrl,
    apiKey: config.api.key,
    timeoutMs: config.api.timeoutMs,
    logger: log,
    ...(config.api.tls && { tls: config.api.tls }),
    sandboxUpstream: config.allowSandboxUpstream ? 'allow' : 'refuse',
  });
  created(api, (a) => a.close());
  const verifier = createVerifier({
    config: v,
    api,
    registry,
    replyEncoder,
    partitionCount,
    // Copies are measured uncompressed, whatever KAFKA_COMPRESSION: a compressed copy's size is known
    // only once kafkajs has compressed its batch, too late to cut it.
    dlqMaxBytes,
    metrics,
    logger: log,
    kafka,
    transactionalId: `${v.groupId}.verifier.${instanceId}`,
  });
  wired = verifier;
  // Closes what it has opened before it rejects.
  await outlasting('joining the consumer group', 'Kafka', () => verifier.start(signal));
  const done = verifier.done.finally(async () => {
    await ops.stop();
    await api.close();
    await admin.close();
  });
  return {
    done,
    opsUrl: url,
    async stop() {
      await verifier.stop();
      await done.catch(() => {});
    },
  };
}
