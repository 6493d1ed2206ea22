import { Registry } from 'prom-client';
import type { ConnectorConfig } from '../config/index.ts';
import { createKafkaClient, createSchemaRegistry, type KafkaClient, type TopicSpec } from '../kafka/index.ts';
import type { Logger } from '../logger.ts';
import { startOpsServerFirst } from '../observability/http-server.ts';
import { type StartOptions, type StartUpSteps, startUp } from '../start-up.ts';
import { type Connector, createConnector, retryReporter } from './connector.ts';
import { openKafkaSession, registerAlertSchemas } from './kafka-session.ts';
import { createConnectorMetrics } from './metrics.ts';
import { workerPageSource } from './worker-pages.ts';

export { readCursorRecord, resetCursorRecord, transactionalIdOf } from './kafka-session.ts';

export function connectorTopics(config: ConnectorConfig): TopicSpec[] {
  const { topics } = config;
  return [
    {
      topic: topics.alertsTopic,
      partitions: topics.alertsPartitions,
      replicationFactor: topics.replicationFactor,
      configs: { 'cleanup.policy': 'compact' },
    },
    { topic: topics.alertsDlqTopic, partitions: 1, replicationFactor: topics.replicationFactor, configs: {} },
    {
      topic: topics.offsetsTopic,
      partitions: 1,
      replicationFactor: topics.replicationFactor,
      configs: { 'cleanup.policy': 'compact' },
      exactPartitions: true,
    },
  ];
}

/** Pages fetched and prepared ahead of the loop: a few hundred kB each at 1,000 rows. */
const PAGE_READ_AHEAD = 3;

export interface RunningConnector {
  connector: Connector;
  /** Resolves when the loop ends after stop(); rejects with the failure that ended it otherwise. */
  done: Promise<void>;
  opsUrl: string;
  stop(): Promise<void>;
}

/** The largest records the connector's topics take, as provisioned. */
interface TopicLimits {
  eventMaxBytes: number;
  dlqMaxBytes: number;
  /** Undefined with a compression codec: the broker judges a compressed cursor record. */
  cursorMaxBytes: number | undefined;
}

/** Provisions the connector's topics and reads their limits, through an admin client of its own. */
async function provisioned(
  kafka: KafkaClient,
  config: ConnectorConfig,
  step: StartUpSteps['step'],
  signal: AbortSignal | undefined,
): Promise<TopicLimits> {
  const admin = await kafka.admin({ signal });
  try {
    await step('provisioning the topics', admin.provisionTopics(connectorTopics(config)));
    // Checked uncompressed whatever the codec: a row whose event does not fit goes to the DLQ, cut
    // down there if it must be, rather than failing its page's transaction at every restart.
    const eventMaxBytes = await step(
      "reading the alerts topic's max.message.bytes",
      admin.maxMessageBytes(config.topics.alertsTopic),
    );
    const dlqMaxBytes = await step(
      "reading the alerts DLQ topic's max.message.bytes",
      admin.maxMessageBytes(config.topics.alertsDlqTopic),
    );
    // A compressed batch's size is known only once kafkajs compressed it: the broker judges those.
    const cursorMaxBytes =
      (config.kafka.compression ?? 'none') === 'none'
        ? await step(
            "reading the offsets topic's max.message.bytes",
            admin.maxMessageBytes(config.topics.offsetsTopic),
          )
        : undefined;
    return { eventMaxBytes, dlqMaxBytes, cursorMaxBytes };
  } finally {
    await admin.close();
  }
}

/**
 * Wires the connector: provisioning, schemas, API client, Kafka sessions, metrics and ops endpoints.
 * `signal` ends start-up at once (AbortedError), what it had created released; once started, stop().
 */
export async function startConnector(
  config: ConnectorConfig,
  logger: Logger,
  { signal }: StartOptions = {},
): Promise<RunningConnector> {
  return startUp(signal, (steps) => wire(config, logger, steps), {
    logger: logger.child({ component: 'connector' }),
  });
}

/** startConnector's steps: each one the stop signal ends, or taking it. */
async function wire(config: ConnectorConfig, logger: Logger, steps: StartUpSteps): Promise<RunningConnector> {
  const { signal, step, created, outlasting } = steps;
  const log = logger.child({ component: 'connector' });
  const registry = new Registry();
  const metrics = createConnectorMetrics(registry);
  let wired: Connector | undefined;
  const { ops, url } = await startOpsServerFirst(steps, config.http, {
    registry,
    healthy: () => metrics.state !== 'stopped',
    ready: () => wired?.ready(),
    logger: log,
  });
  const kafka: KafkaClient = createKafkaClient({ config: config.kafka, logger });
  const { eventMaxBytes, dlqMaxBytes, cursorMaxBytes } = await outlasting(
    'provisioning the topics',
    'Kafka',
    () => provisioned(kafka, config, step, signal),
  );
  const schemaRegistry = createSchemaRegistry(config.registry);
  const encoders = await outlasting('registering the alert schemas', 'the schema registry', () =>
    registerAlertSchemas(schemaRegistry, config.topics.alertsTopic),
  );
  const pages = workerPageSource({
    api: {
      baseUrl: config.api.baseUrl,
      apiKey: config.api.key,
      timeoutMs: config.api.timeoutMs,
      cursorParam: config.connector.cursorParam,
      ...(config.api.tls && { tls: config.api.tls }),
      sandboxUpstream: config.allowSandboxUpstream ? 'allow' : 'refuse',
    },
    schemas: {
      AlertUpserted: { schemaId: encoders.AlertUpserted.schemaId, subject: encoders.AlertUpserted.subject },
      AlertDeactivated: {
        schemaId: encoders.AlertDeactivated.schemaId,
        subject: encoders.AlertDeactivated.subject,
      },
    },
    logLevel: logger.level,
    readAhead: PAGE_READ_AHEAD,
    eventMaxBytes,
    onRetry: retryReporter(metrics, log),
    logger: log,
  });
  created(pages, (p) => p.close());
  const connector = createConnector({
    name: config.connector.name,
    exportStart: config.connector.exportStart,
    cursorParam: config.connector.cursorParam,
    pollIntervalMs: config.connector.pollIntervalMs,
    txMaxRows: config.connector.txMaxRows,
    txMaxMs: config.connector.txMaxMs,
    pages,
    openSession: (stopping) =>
      openKafkaSession({
        kafka,
        config,
        logger: log,
        signal: stopping,
        dlqMaxBytes,
        ...(cursorMaxBytes && { cursorMaxBytes }),
      }),
    metrics,
    logger: log,
  });
  wired = connector;
  log.info(
    { ops: url, alertsTopic: config.topics.alertsTopic, connector: config.connector.name },
    'connector starting',
  );
  const done = connector.start().finally(async () => {
    await ops.stop();
    await pages.close();
  });
  return {
    connector,
    done,
    opsUrl: url,
    async stop() {
      await connector.stop();
      await done.catch(() => {});
    },
  };
}
