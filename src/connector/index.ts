import { Registry } from 'prom-client';
import { createApiClient } from '../api/index.ts';
import type { ConnectorConfig } from '../config/index.ts';
import { createKafkaClient, createSchemaRegistry, type KafkaClient, type TopicSpec } from '../kafka/index.ts';
import type { Logger } from '../logger.ts';
import { createOpsServer } from '../observability/http-server.ts';
import { type Connector, createConnector } from './connector.ts';
import { openKafkaSession, registerAlertSchemas } from './kafka-session.ts';
import { createConnectorMetrics } from './metrics.ts';

export { readCursorRecord, transactionalIdOf } from './kafka-session.ts';

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

export interface RunningConnector {
  connector: Connector;
  /** Resolves when the loop ends after stop(); rejects with the failure that ended it otherwise. */
  done: Promise<void>;
  opsUrl: string;
  stop(): Promise<void>;
}

/** Wires the connector: provisioning, schemas, API client, Kafka sessions, metrics and ops endpoints. */
export async function startConnector(config: ConnectorConfig, logger: Logger): Promise<RunningConnector> {
  const log = logger.child({ component: 'connector' });
  const kafka: KafkaClient = createKafkaClient({ config: config.kafka, logger });
  const admin = await kafka.admin();
  try {
    await admin.provisionTopics(connectorTopics(config));
  } finally {
    await admin.close();
  }
  const encoders = await registerAlertSchemas(
    createSchemaRegistry(config.registry),
    config.topics.alertsTopic,
  );
  const api = createApiClient({
    baseUrl: config.api.baseUrl,
    apiKey: config.api.key,
    timeoutMs: config.api.timeoutMs,
    cursorParam: config.connector.cursorParam,
    logger: log,
    ...(config.api.tls && { tls: config.api.tls }),
  });
  const registry = new Registry();
  const metrics = createConnectorMetrics(registry);
  const connector = createConnector({
    name: config.connector.name,
    exportStart: config.connector.exportStart,
    pollIntervalMs: config.connector.pollIntervalMs,
    txMaxRows: config.connector.txMaxRows,
    txMaxMs: config.connector.txMaxMs,
    feed: api,
    openSession: () => openKafkaSession({ kafka, encoders, config, logger: log }),
    metrics,
    logger: log,
  });
  const ops = createOpsServer({
    host: config.http.host,
    port: config.http.port,
    registry,
    healthy: () => metrics.state !== 'stopped',
    ready: () => connector.ready(),
    logger: log,
  });
  const { url } = await ops.start();
  log.info(
    { ops: url, alertsTopic: config.topics.alertsTopic, connector: config.connector.name },
    'connector starting',
  );
  const done = connector.start().finally(async () => {
    await ops.stop();
    await api.close();
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
