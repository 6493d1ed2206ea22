import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** True when a Docker engine answers (not merely the client binary). */
export async function dockerAvailable(): Promise<boolean> {
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * Kafka and Apicurio as containers, for laptops with a Docker engine. CI and this project's machines
 * have none and use the JVM stack instead.
 */
export async function startContainers(): Promise<{
  brokers: string;
  registryUrl: string;
  stop(): Promise<void>;
}> {
  const { GenericContainer, Network, Wait } = await import('testcontainers');
  const network = await new Network().start();
  const kafka = await new GenericContainer('apache/kafka:4.1.0')
    .withNetwork(network)
    .withExposedPorts({ container: 9092, host: 0 })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      // As the JVM stack's broker (src/stack/services.ts, KAFKA_SETTINGS): tests may deny a topic.
      KAFKA_AUTHORIZER_CLASS_NAME: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND: 'true',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .start();
  // The advertised address must be the mapped host port, known only once the container runs.
  const port = kafka.getMappedPort(9092);
  await kafka.exec([
    '/opt/kafka/bin/kafka-configs.sh',
    '--bootstrap-server',
    'localhost:9092',
    '--alter',
    '--entity-type',
    'brokers',
    '--entity-name',
    '1',
    '--add-config',
    `advertised.listeners=[PLAINTEXT://localhost:${port}]`,
  ]);
  const registry = await new GenericContainer('apicurio/apicurio-registry:3.0.9')
    .withNetwork(network)
    .withExposedPorts(8080)
    .withEnvironment({
      APICURIO_CCOMPAT_USE_CANONICAL_HASH: 'true',
      APICURIO_RULES_GLOBAL_COMPATIBILITY: 'BACKWARD',
    })
    .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080))
    .start();
  return {
    brokers: `localhost:${port}`,
    registryUrl: `http://localhost:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
    async stop() {
      await Promise.all([kafka.stop(), registry.stop()]);
      await network.stop();
    },
  };
}
