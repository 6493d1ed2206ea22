import { kafkajsPath } from '../kafkajs-path.ts';
import {
  murmur2ModulePath,
  type PartitionerFactory,
  type PartitionMetadata,
  partitionerModulePath,
  require,
  swapModule,
} from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 6. Partitioning without Long objects.
 *
 * kafkajs's default partitioner hashes each key with murmur2 through its BigInt-backed Long class
 * (a dozen objects per 4 key bytes) and filters the partition list for every message.
 *
 * The replacement hashes with 32-bit integer arithmetic (`Math.imul`): the low 32 bits, all the
 * Long version keeps, are the same, and so is every partition (Java's murmur2). It filters the
 * partition list only for a message without key or partition, the only one that needs it.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs partitioning without Long objects".
 */

const MURMUR2_SEED = 0x9747b28c;
const MURMUR2_M = 0x5bd1e995;

/** Kafka's murmur2 (Java's `Utils.murmur2`), on 32-bit integers. Keys as kafkajs takes them. */
export function murmur2(key: unknown): number {
  const data = Buffer.isBuffer(key) ? key : Buffer.from(String(key));
  const length = data.length;
  let h = (MURMUR2_SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k =
      (data[i4] as number) |
      ((data[i4 + 1] as number) << 8) |
      ((data[i4 + 2] as number) << 16) |
      ((data[i4 + 3] as number) << 24);
    k = Math.imul(k, MURMUR2_M);
    k ^= k >>> 24;
    k = Math.imul(k, MURMUR2_M);
    h = Math.imul(h, MURMUR2_M) ^ k;
  }
  // The last one to three bytes (Java falls through its switch on length % 4).
  const tail = length & ~3;
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= (data[tail + 2] as number) << 16;
    if (rest >= 2) h ^= (data[tail + 1] as number) << 8;
    h ^= data[tail] as number;
    h = Math.imul(h, MURMUR2_M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, MURMUR2_M);
  h ^= h >>> 15;
  return h | 0;
}

const toPositive = (x: number) => x & 0x7fffffff;

export function install(state: KafkajsFixState): void {
  installOnce(state, 'long-free-partitioner', () => {
    state.originals.murmur2 = require(murmur2ModulePath) as (key: unknown) => number;
    state.originals.createPartitioner = require(partitionerModulePath) as PartitionerFactory;
    const randomBytes = require(kafkajsPath('producer/partitioners/legacy/randomBytes.js')) as (
      size: number,
    ) => Buffer;
    // kafkajs's partitioner (legacy/partitioner.js) with the same rules, the same random start per
    // topic and the same round robin; the list of available partitions is built only when used.
    const createPartitioner: PartitionerFactory = (hash) => () => {
      const counters: Record<string, number> = {};
      return ({ topic, partitionMetadata, message }) => {
        if (!(topic in counters)) counters[topic] = randomBytes(32).readUInt32BE(0);
        const numPartitions = partitionMetadata.length;
        if (message.partition !== null && message.partition !== undefined) return message.partition;
        if (message.key !== null && message.key !== undefined)
          return toPositive(hash(message.key)) % numPartitions;
        const available = partitionMetadata.filter((p) => p.leader >= 0);
        counters[topic] = (counters[topic] as number) + 1;
        if (available.length > 0) {
          return (available[toPositive(counters[topic] as number) % available.length] as PartitionMetadata)
            .partitionId;
        }
        return toPositive(counters[topic] as number) % numPartitions;
      };
    };
    swapModule(murmur2ModulePath, murmur2);
    swapModule(partitionerModulePath, createPartitioner);
  });
}
