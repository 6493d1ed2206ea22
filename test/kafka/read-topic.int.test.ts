import { createServer, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AbortedError, KafkaError } from '../../src/errors.ts';
import type { IncomingRecord, KafkaAdmin, KafkaClient } from '../../src/kafka/index.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import type { ReadTopicOptions } from '../../src/kafka/types.ts';
import { retry } from '../../src/retry.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { uniqueName } from '../helpers/stack.ts';

const values = (records: IncomingRecord[]) => records.map((r) => r.value?.toString() ?? null);

async function producerFor(kafka: KafkaClient) {
  const producer = await kafka.transactionalProducer({ transactionalId: uniqueName('read-end') });
  onTestFinished(() => producer.close());
  return producer;
}

/** A topic of `partitions` for this test, and a transactional producer to write it. */
async function topicAndProducer(name: string, partitions = 1) {
  const { kafka } = testClients();
  const [topic = ''] = await testTopics(kafka, [name], partitions);
  return { kafka, topic, producer: await producerFor(kafka) };
}

/**
 * Waits until read_committed readers see `topic` up to `highs` (per partition, markers included).
 * EndTxn returns once the coordinator has decided the outcome; the broker writes the markers after
 * that, and until a partition has its marker its last stable offset stays before the transaction, so
 * a reader started at once may find the transaction's records past its end. There is no event to
 * await for that write: the offsets are polled, with the project's retry.
 */
async function markersWritten(kafka: KafkaClient, topic: string, highs: number[]) {
  const admin = await kafka.admin();
  try {
    await retry(
      async () => {
        const offsets = await admin.topicOffsets(topic);
        const high = (partition: number) => offsets.find((o) => o.partition === partition)?.high;
        if (!highs.every((h, partition) => high(partition) === String(h))) {
          throw new Error(`markers of ${topic} not written: ${JSON.stringify(offsets)}`);
        }
      },
      {
        retries: Number.POSITIVE_INFINITY,
        deadline: Date.now() + 10_000,
        initialDelayMs: 10,
        maxDelayMs: 100,
        shouldRetry: () => true,
      },
    );
  } finally {
    await admin.close();
  }
}

/** Reads `topic` to its end, returning what was delivered and the last progress reported. */
async function readAll(kafka: KafkaClient, topic: string) {
  const seen: IncomingRecord[] = [];
  let progress = { read: -1n, total: -1n };
  let caughtUp = 0;
  await kafka.readTopic(topic, (records) => void seen.push(...records), {
    onProgress: (p) => {
      progress = p;
    },
    onCaughtUp: () => caughtUp++,
  });
  return { seen, progress, caughtUp };
}

describe('reading a topic to its end (read_committed)', () => {
  it('stops at the end when every partition ends with a commit marker', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-commit', 2);
    await producer.transaction([
      { topic, key: 'a', value: Buffer.from('1'), partition: 0 },
      { topic, key: 'b', value: Buffer.from('2'), partition: 1 },
    ]);
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('3'), partition: 0 }]);
    await markersWritten(kafka, topic, [4, 2]);

    const { seen, progress, caughtUp } = await readAll(kafka, topic);
    expect(values(seen).sort()).toEqual(['1', '2', '3']);
    // Partition 0: 1, marker, 3, marker; partition 1: 2, marker.
    expect(progress).toEqual({ read: 6n, total: 6n });
    expect(caughtUp).toBe(1);
  });

  it('stops at the end when the topic ends with an aborted transaction and its marker', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-abort', 2);
    await producer.transaction([
      { topic, key: 'a', value: Buffer.from('1'), partition: 0 },
      { topic, key: 'b', value: Buffer.from('2'), partition: 1 },
    ]);
    const aborted = await producer.begin();
    await aborted.send([
      { topic, key: 'a', value: Buffer.from('never'), partition: 0 },
      { topic, key: 'a', value: Buffer.from('never either'), partition: 0 },
    ]);
    await aborted.abort();
    await markersWritten(kafka, topic, [5, 2]);

    const { seen, progress } = await readAll(kafka, topic);
    expect(values(seen).sort()).toEqual(['1', '2']);
    expect(progress.read).toBe(progress.total);
  });

  it('does not wait for a transaction still open at start, and never shows its records', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-open');
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('committed') }]);
    await markersWritten(kafka, topic, [2]);
    const open = await producer.begin();
    await open.send([{ topic, key: 'a', value: Buffer.from('open') }]);
    onTestFinished(() => open.abort());

    const { seen } = await readAll(kafka, topic);
    expect(values(seen)).toEqual(['committed']);
  });

  it('with awaitOpenTransactions, waits for a transaction open at start and reads what was committed after it', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-through');
    const other = await producerFor(kafka);
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('before') }]);
    const open = await other.begin();
    await open.send([{ topic, key: 'b', value: Buffer.from('open') }]);
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('after') }]);

    const { promise: waiting, resolve: onWaiting } = Promise.withResolvers<unknown>();
    const seen: IncomingRecord[] = [];
    const options: ReadTopicOptions = { awaitOpenTransactions: { timeoutMs: 60_000, onWaiting } };
    const reading = kafka.readTopic(topic, (records) => void seen.push(...records), options);
    expect(await Promise.race([waiting.then(() => 'waiting'), reading.then(() => 'read')])).toBe('waiting');
    await open.abort();
    await reading;
    expect(values(seen)).toEqual(['before', 'after']);
  });

  it('with awaitOpenTransactions, fails retriable when a transaction stays open longer than allowed', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['read-through-timeout']);
    const other = await producerFor(kafka);
    const open = await other.begin();
    await open.send([{ topic, key: 'b', value: Buffer.from('open') }]);
    onTestFinished(() => open.abort());
    const options: ReadTopicOptions = { awaitOpenTransactions: { timeoutMs: 300 } };
    const failure = await kafka.readTopic(topic, () => {}, options).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(KafkaError);
    expect((failure as KafkaError).retriable).toBe(true);
    expect((failure as KafkaError).message).toMatch(/transactions still open/);
  });

  it.each([
    ['to its end', {}],
    ['with awaitOpenTransactions', { awaitOpenTransactions: { timeoutMs: 300 } }],
  ] as const)('%s, fails at once, not retriable, naming a topic that does not exist', async (_, options) => {
    const { kafka } = testClients();
    const topic = uniqueName('read-missing');
    const failure = await kafka.readTopic(topic, () => {}, options).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(KafkaError);
    expect((failure as KafkaError).retriable).toBe(false);
    expect((failure as KafkaError).message).toBe(`topic ${topic} does not exist`);
  });

  it('starts each partition at its given offset and reports the positions reached', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-start', 2);
    await producer.transaction([
      { topic, key: 'a', value: Buffer.from('a1'), partition: 0 },
      { topic, key: 'a', value: Buffer.from('a2'), partition: 0 },
      { topic, key: 'a', value: Buffer.from('a3'), partition: 0 },
      { topic, key: 'b', value: Buffer.from('b1'), partition: 1 },
    ]);
    await markersWritten(kafka, topic, [4, 2]);
    const seen: IncomingRecord[] = [];
    const positions = new Map<number, bigint>();
    let caughtUp = 0;
    // Partition 0 from offset 2 (a3 and the marker); partition 1 from its beginning.
    await kafka.readTopic(topic, (records) => void seen.push(...records), {
      startOffsets: new Map([[0, 2n]]),
      onPosition: (partition, next) => positions.set(partition, next),
      onCaughtUp: () => caughtUp++,
    });
    expect(values(seen).sort()).toEqual(['a3', 'b1']);
    expect(positions).toEqual(
      new Map([
        [0, 4n],
        [1, 2n],
      ]),
    );
    expect(caughtUp).toBe(1);

    // Started at the end of every partition: caught up at once, nothing read.
    const none: IncomingRecord[] = [];
    await kafka.readTopic(topic, (records) => void none.push(...records), {
      startOffsets: new Map([
        [0, 4n],
        [1, 2n],
      ]),
    });
    expect(none).toEqual([]);
  });

  it('resolves at once on an empty topic, reporting it caught up', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['read-empty'], 3);
    const { seen, caughtUp } = await readAll(kafka, topic);
    expect(seen).toEqual([]);
    expect(caughtUp).toBe(1);
  });

  it('ends with the error of a failing callback', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-fail');
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('1') }]);
    await markersWritten(kafka, topic, [2]);
    const boom = new Error('cannot apply');
    await expect(
      kafka.readTopic(topic, () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
  });

  it('rejects with AbortedError when aborted before the end', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-abort-signal');
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('1') }]);
    const controller = new AbortController();
    controller.abort();
    await expect(kafka.readTopic(topic, () => {}, { signal: controller.signal })).rejects.toBeInstanceOf(
      AbortedError,
    );
  });

  it('ends with AbortedError when aborted while its broker does not answer', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-unanswered');
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('1') }]);
    // The broker gone between the end offsets and the read: connections open, nothing answers.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    const { promise: connected, resolve: onConnection } = Promise.withResolvers<void>();
    silent.once('connection', () => onConnection());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => {
      for (const socket of sockets) socket.destroy();
      silent.close();
    });
    const { port } = silent.address() as { port: number };
    const away = new kafkajs.Kafka({ brokers: [`127.0.0.1:${port}`], logLevel: kafkajs.logLevel.NOTHING });
    const admin = await kafka.admin();
    onTestFinished(() => admin.close());

    const controller = new AbortController();
    const reading = readTopic(away, admin, topic, () => {}, { signal: controller.signal });
    await connected;
    controller.abort();
    await expect(reading).rejects.toBeInstanceOf(AbortedError);
  });

  it('ends with AbortedError when aborted while its end offsets are still being looked up', async () => {
    const away = new kafkajs.Kafka({ brokers: ['127.0.0.1:9'], logLevel: kafkajs.logLevel.NOTHING });
    const asked = Promise.withResolvers<void>();
    // A lookup that kafkajs's retries keep going while the broker is away: it never settles here.
    const admin = {
      topicOffsets: () => {
        asked.resolve();
        return new Promise<never>(() => {});
      },
    } as unknown as KafkaAdmin;
    const controller = new AbortController();
    const reading = readTopic(away, admin, 't', () => {}, { signal: controller.signal });
    await asked.promise;
    controller.abort();
    await expect(reading).rejects.toBeInstanceOf(AbortedError);
  });

  it('in follow mode, reports the snapshot, then applies records written later until aborted', async () => {
    const { kafka, topic, producer } = await topicAndProducer('read-follow', 2);
    await producer.transaction([{ topic, key: 'a', value: Buffer.from('before'), partition: 0 }]);
    await markersWritten(kafka, topic, [2, 0]);

    const controller = new AbortController();
    const events: string[] = [];
    const { promise: caughtUp, resolve: onCaughtUp } = Promise.withResolvers<void>();
    const reading = kafka.readTopic(
      topic,
      (records) => {
        events.push(...(values(records) as string[]));
        if (events.includes('after')) controller.abort();
      },
      {
        follow: true,
        signal: controller.signal,
        onCaughtUp: () => {
          events.push('caught up');
          onCaughtUp();
        },
      },
    );
    await caughtUp;
    const aborted = await producer.begin();
    await aborted.send([{ topic, key: 'b', value: Buffer.from('aborted'), partition: 1 }]);
    await aborted.abort();
    await producer.transaction([{ topic, key: 'b', value: Buffer.from('after'), partition: 1 }]);
    await reading;
    expect(events).toEqual(['before', 'caught up', 'after']);
  });
});
