import { onTestFinished, vi } from 'vitest';
import { loadReplayConfig } from '../../src/config/index.ts';
import {
  createKafkaClient,
  createSchemaRegistry,
  type IncomingRecord,
  type KafkaClient,
} from '../../src/kafka/index.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { silentLogger } from '../../src/logger.ts';
import { stackEnv, uniqueName } from './stack.ts';

/** A Kafka client and registry client on the test run's real stack. */
export function testClients(): { kafka: KafkaClient; registry: ReturnType<typeof createSchemaRegistry> } {
  const config = loadReplayConfig(stackEnv());
  return {
    kafka: createKafkaClient({ config: config.kafka, logger: silentLogger() }),
    registry: createSchemaRegistry(config.registry),
  };
}

/** Creates topics for one test and deletes them when it ends. */
export async function testTopics(
  kafka: KafkaClient,
  names: string[],
  partitions = 1,
  configs: Record<string, string> = {},
) {
  const topics = names.map((n) => uniqueName(n));
  const admin = await kafka.admin();
  await admin.provisionTopics(topics.map((topic) => ({ topic, partitions, replicationFactor: 1, configs })));
  onTestFinished(async () => {
    await admin.deleteTopics(topics).catch(() => {});
    await admin.close();
  });
  return topics;
}

/** A producer on `kafka`, closed when the test ends. */
export async function testProducer(kafka: KafkaClient) {
  const producer = await kafka.producer();
  onTestFinished(() => producer.close());
  return producer;
}

/**
 * Denies the client without credentials (User:ANONYMOUS: every client of the test stack)
 * `operations` on `topic` with ACLs, removed when the test ends (before the topics made earlier in
 * the test are deleted, which the ACLs would refuse). The stack's broker allows what no ACL names
 * (src/stack/services.ts); on a topic with ACLs StandardAuthorizer refuses every operation none
 * allows. Resolves once the broker applies them. kafkajs directly: fraudlink manages no ACL.
 */
export async function denyTopic(topic: string, operations: ('DESCRIBE' | 'WRITE')[]): Promise<void> {
  const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;
  const admin = new kafkajs.Kafka({
    brokers: stackEnv().KAFKA_BROKERS.split(','),
    logLevel: kafkajs.logLevel.NOTHING,
  }).admin();
  await admin.connect();
  const resource = {
    resourceType: AclResourceTypes.TOPIC,
    resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL,
  };
  const entries = operations.map((op) => ({
    ...resource,
    principal: 'User:ANONYMOUS',
    host: '*',
    operation: AclOperationTypes[op],
    permissionType: AclPermissionTypes.DENY,
  }));
  const all = { ...resource, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY };
  try {
    await admin.createAcls({ acl: entries });
  } catch (err) {
    await admin.disconnect();
    if ((err as { type?: string }).type !== 'SECURITY_DISABLED') throw err;
    throw new Error(
      'the test broker runs no authorizer: a stack an older fraudlink started, or one given through ' +
        'KAFKA_BROKERS; restart it (npm run stack -- down, then up) or point the tests at a current one',
      { cause: err },
    );
  }
  onTestFinished(async () => {
    try {
      await admin.deleteAcls({ filters: [all] });
    } finally {
      await admin.disconnect();
    }
  });
  // The broker answers DescribeAcls from its authorizer: listed there, the ACLs are enforced.
  await vi.waitFor(
    async () => {
      const { resources } = await admin.describeAcls(all);
      if ((resources[0]?.acls.length ?? 0) < entries.length)
        throw new Error(`ACLs on ${topic} not applied yet`);
    },
    { timeout: 30_000, interval: 50 },
  );
}

export interface Collector {
  records: IncomingRecord[];
  /** Resolves once `predicate` holds for the records collected so far. */
  until(predicate: (records: IncomingRecord[]) => boolean, timeoutMs?: number): Promise<IncomingRecord[]>;
}

/** A group consumer reading `topic` from the beginning, collecting every record it sees. */
export async function collect(
  kafka: KafkaClient,
  topic: string,
  isolation: 'read_committed' | 'read_uncommitted' = 'read_committed',
): Promise<Collector> {
  const records: IncomingRecord[] = [];
  const waiters = new Set<() => void>();
  const consumer = kafka.groupConsumer({
    groupId: uniqueName('test-collector'),
    topics: [topic],
    isolation,
    fromBeginning: true,
    eachBatch: async (batch) => {
      records.push(...batch.records);
      for (const wake of waiters) wake();
    },
  });
  onTestFinished(() => consumer.close());
  await consumer.start();
  return {
    records,
    until(predicate, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (predicate(records)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(records);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`condition not met after ${timeoutMs} ms with ${records.length} records`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
