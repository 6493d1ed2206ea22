import { describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../src/config/index.ts';
import { CursorTracker } from '../../src/connector/cursor.ts';
import { cursorRecordOf, openKafkaSession, readCursorRecord } from '../../src/connector/kafka-session.ts';
import { KafkaError } from '../../src/errors.ts';
import type { IncomingRecord, KafkaClient, OutgoingRecord } from '../../src/kafka/index.ts';
import { createLogger, silentLogger } from '../../src/logger.ts';
import { logCapture } from '../helpers/log.ts';

const config = {
  topics: {
    alertsTopic: 'alerts',
    alertsPartitions: 1,
    alertsDlqTopic: 'dlq',
    replicationFactor: 1,
    offsetsTopic: 'offsets',
  },
  connector: { name: 'c' },
} as Pick<ConnectorConfig, 'topics' | 'connector'>;

/** A Kafka client holding the offsets topic in memory; `transactions` are the committed sends. */
function fakeKafka(offsets: IncomingRecord[] = []) {
  const transactions: OutgoingRecord[][] = [];
  const kafka = {
    async transactionalProducer() {
      return {
        async transaction(records: OutgoingRecord[]) {
          transactions.push(records);
        },
        async close() {},
      };
    },
    async readTopic(_topic: string, onRecords: (records: IncomingRecord[]) => void) {
      onRecords(offsets);
    },
  } as unknown as KafkaClient;
  return { kafka, transactions };
}

describe('the connector publish session', () => {
  it('refuses to commit a cursor record larger than the offsets topic takes, naming the topic and max.message.bytes', async () => {
    const { kafka, transactions } = fakeKafka();
    const session = await openKafkaSession({ kafka, config, logger: silentLogger(), cursorMaxBytes: 10_000 });
    const tracker = CursorTracker.initial('c', 'earliest');
    for (let i = 0; i < 1000; i++) tracker.admitEvent(2000, `id-${i}`, String(i).padStart(16, '0'), `a${i}`);
    const commit = session.commit({ events: [], rejected: [], cursor: tracker.snapshot() });
    await expect(commit).rejects.toBeInstanceOf(KafkaError);
    await expect(commit).rejects.toThrow(
      /max\.message\.bytes of offsets \(10000\).*1000 rows at the high-water mark/,
    );
    await expect(commit).rejects.toMatchObject({ retriable: false });
    expect(transactions).toEqual([]);
  });

  it('commits a cursor record within the offsets topic limit', async () => {
    const { kafka, transactions } = fakeKafka();
    const session = await openKafkaSession({ kafka, config, logger: silentLogger(), cursorMaxBytes: 10_000 });
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'id-a', 'row-a', 'a');
    await session.commit({ events: [], rejected: [], cursor: tracker.snapshot() });
    expect(transactions).toHaveLength(1);
    expect(transactions[0]?.[0]?.topic).toBe('offsets');
  });

  it('starts afresh from a tombstone for CONNECTOR_NAME, warning that the cursor was deleted after earlier records', async () => {
    const tracker = CursorTracker.initial('c', 'earliest');
    tracker.admitEvent(2000, 'id-a', 'row-a', 'a');
    const written = cursorRecordOf('offsets', 'c', tracker.snapshot());
    const incoming = (offset: number, value: Buffer | null): IncomingRecord => ({
      topic: 'offsets',
      partition: 0,
      offset: String(offset),
      key: Buffer.from('c'),
      value,
      headers: {},
      timestamp: 0,
    });
    const { kafka } = fakeKafka([incoming(0, written.value), incoming(1, null)]);
    const log = logCapture();
    const logger = createLogger({ destination: log.stream });
    expect(await readCursorRecord(kafka, 'offsets', 'c', { logger })).toBeNull();
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        offset: '1',
        earlierRecords: 1,
        msg: expect.stringMatching(/cursor record of c was deleted \(a tombstone\).*EXPORT_START/),
      }),
    );
  });
});
