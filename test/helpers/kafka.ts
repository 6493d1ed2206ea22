import { onTestFinished } from 'vitest';
import { loadReplayConfig } from '../../src/config/index.ts';
import {
  createKafkaClient,
  createSchemaRegistry,
  type IncomingRecord,
  type KafkaClient,
} from '../../src/kafka/index.ts';
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
