import { onTestFinished } from 'vitest';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { stackEnv } from '../helpers/stack.ts';

/** Bytes a ZSTD "bomb" decompresses to: past MAX_DECOMPRESSED_BYTES (64 MiB), a few KB on disk. */
export const BOMB_BYTES = 80 * 1024 * 1024;

/**
 * Writes one ZSTD record batch of `records` records of zeros, BOMB_BYTES in all, to `topic` (its
 * `partition`), with kafkajs directly: this layer's producers refuse a send that large before
 * compressing it. Resolves with the batch's first and last offsets.
 */
export async function writeBomb(
  topic: string,
  { partition = 0, records = 2 }: { partition?: number; records?: number } = {},
): Promise<{ firstOffset: string; lastOffset: string }> {
  const client = new kafkajs.Kafka({
    brokers: stackEnv().KAFKA_BROKERS.split(','),
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const producer = client.producer();
  await producer.connect();
  onTestFinished(() => producer.disconnect());
  const value = Buffer.alloc(BOMB_BYTES / records);
  const [sent] = await producer.send({
    topic,
    compression: kafkajs.CompressionTypes.ZSTD,
    messages: Array.from({ length: records }, (_, i) => ({ key: `bomb-${i}`, value, partition })),
  });
  const firstOffset = BigInt(sent?.baseOffset ?? '-1');
  return { firstOffset: firstOffset.toString(), lastOffset: (firstOffset + BigInt(records - 1)).toString() };
}
