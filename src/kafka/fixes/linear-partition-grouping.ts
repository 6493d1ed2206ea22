import { groupModulePath, require, swapModule } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 4. Linear grouping by partition.
 *
 * kafkajs's `groupMessagesPerPartition` appends with `[...current, message]`, copying the
 * partition's array for every message: quadratic, 8% of the connector's Kafka thread at
 * 5,000-record transactions.
 *
 * The replacement pushes, in the same order. It also runs fix 15's check of a send's partitions
 * (`partitionBytesLimit`), when that fix is installed.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs grouping by partition" › "is linear and groups
 * exactly as the original, keeping each partition in message order".
 */

export type Grouper = (args: {
  topic: string;
  partitionMetadata: unknown[];
  messages: unknown[];
  partitioner: (args: { topic: string; partitionMetadata: unknown[]; message: unknown }) => number;
}) => Record<number, unknown[]>;

export function install(state: KafkajsFixState): void {
  installOnce(state, 'linear-partition-grouping', () => {
    state.originals.groupMessagesPerPartition = require(groupModulePath) as Grouper;
    const grouped: Grouper = ({ topic, partitionMetadata, messages, partitioner }) => {
      const result: Record<number, unknown[]> = {};
      if (partitionMetadata.length === 0) return result;
      const limit = state.partitionBytesLimit?.(topic, messages);
      for (const message of messages) {
        const partition = partitioner({ topic, partitionMetadata, message });
        const list = result[partition];
        if (list) list.push(message);
        else result[partition] = [message];
        limit?.(partition, message, list !== undefined);
      }
      return result;
    };
    swapModule(groupModulePath, grouped);
  });
}
