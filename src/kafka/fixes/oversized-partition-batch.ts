import { hasErrorName } from '../errors.ts';
import { MAX_SEND_BYTES, recordBytes } from '../records.ts';
import type { OutgoingRecord } from '../types.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 15. A send whose records for one partition outgrow one record batch.
 *
 * kafkajs writes all of a send's records for a partition as one record batch, which the broker
 * refuses whole when it passes the batch limit (`MAX_SEND_BYTES`).
 *
 * Such a send is refused before any request (`PartitionBatchTooLargeError`), by the grouper (fix 4),
 * where a record's partition is first known, so that only such a send is cut into smaller ones
 * (producer.ts), not every send larger than one batch: a 5,000-record connector transaction spread
 * over the alerts topic's partitions goes in one request. Not retriable, so kafkajs's own retry
 * hands it back (wrapped after a reconnect, see `is`). A partition of one record is the broker's to
 * judge. Only sends marked in `cuttableMessages` (producer.ts's) are checked, and only at their
 * first grouping: a retry after part of the send was written must not be refused, or the cut send
 * would write that part twice. Any other kafkajs user in the process (the bench's bare producer)
 * sends as before.
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs grouping by partition" › "refuses, before any
 * request, a fraudlink send whose records for one partition outgrow a batch (fix 15)".
 */

/**
 * The check of one grouping: given a send's topic and message list, a counter called with each
 * message's partition (and whether the partition held a record already), which throws once the
 * partition's records pass one batch; undefined for a send not checked.
 */
export type PartitionBytesLimit = (
  topic: string,
  messages: object,
) => ((partition: number, message: unknown, partitionHadRecords: boolean) => void) | undefined;

export class PartitionBatchTooLargeError extends Error {
  /** Starts its message; kafkajs logs the error at ERROR before handing it back (logging.ts). */
  static readonly prefix = 'send to be cut:';
  readonly retriable = false;
  readonly topic: string;
  readonly partition: number;
  readonly bytes: number;
  constructor(topic: string, partition: number, bytes: number) {
    super(
      `${PartitionBatchTooLargeError.prefix} the records of ${topic}/${partition} take ~${bytes} bytes, more than one batch`,
    );
    this.topic = topic;
    this.partition = partition;
    this.bytes = bytes;
  }

  override get name(): string {
    return 'PartitionBatchTooLargeError';
  }

  /**
   * By name, not `instanceof`: the grouper installed is the first evaluation's (see state.ts), and a
   * test runner may evaluate this module, and so this class, again. Along the cause chain: kafkajs's
   * retry wraps it in a KafkaJSNonRetriableError when sendMessages threw it on after reconnecting a
   * cluster it found disconnected.
   */
  static is(err: unknown): boolean {
    return hasErrorName(err, 'PartitionBatchTooLargeError');
  }
}

export function install(state: KafkajsFixState): void {
  installOnce(state, 'oversized-partition-batch', () => {
    state.partitionBytesLimit = (topic, messages) => {
      // Checked once: a later grouping is a retry, which may follow a partly written send.
      if (!state.cuttableMessages.delete(messages)) return undefined;
      const bytes: Record<number, number> = {};
      return (partition, message, partitionHadRecords) => {
        const total = (bytes[partition] ?? 0) + recordBytes(message as OutgoingRecord);
        bytes[partition] = total;
        if (partitionHadRecords && total > MAX_SEND_BYTES) {
          throw new PartitionBatchTooLargeError(topic, partition, total);
        }
      };
    };
  });
}
