import type {
  Kafka,
  Producer as KafkajsProducer,
  Transaction as KafkajsTransaction,
  TopicMessages,
} from '@fraudlink/kafkajs';
import type { KafkaCompression } from '../config/index.ts';
import { FencedError, MemberFencedError } from '../errors.ts';
import { CODEC_IDS } from './codecs.ts';
import { connectedUnlessAborted } from './connect.ts';
import { forgetCoordinators } from './coordinator-cache.ts';
import { offsetsMemberships } from './eos-manager.ts';
import { hasErrorType, isStaleMember, toKafkaError } from './errors.ts';
import kafkajs, { cuttableMessages, PartitionBatchTooLargeError } from './kafkajs.ts';
import { largestRecord, MAX_SEND_BYTES, sendChunks, toTopicMessages } from './records.ts';
import { keepTransactionProtocolV1, releaseTransactionProtocol } from './transaction-v2.ts';
import type {
  OutgoingRecord,
  Producer,
  Transaction,
  TransactionalProducer,
  TransactionalProducerOptions,
  TransactionOptions,
} from './types.ts';

// kafkajs is CommonJS: its values come through the default export.
const { Partitioners } = kafkajs;

// kafkajs issue #304: commit() returns before the broker has written its markers, so the next
// transaction's first AddPartitionsToTxn often gets CONCURRENT_TRANSACTIONS and waits out
// retry.initialRetryTime. 300 ms (the default) caps throughput at a few transactions a second;
// 5 ms keeps the retry cheap (the verifier commits many small transactions back to back). On the
// transaction protocol v2 (transaction-v2.ts) the broker enrols the partitions and does this retry.
const retry = { initialRetryTime: 5, maxRetryTime: 5000, retries: 12 };

/**
 * Idempotent, one request in flight (kafkajs requires it for idempotence), Java-compatible murmur2
 * keys, and never a topic created by writing to it: kafkajs's producers ask the broker to create a
 * missing topic by default, which would let a requester's `kafka_replyTopic` create topics.
 */
export const producerOptions = {
  allowAutoTopicCreation: false,
  idempotent: true,
  maxInFlightRequests: 1,
  retry,
  createPartitioner: Partitioners.DefaultPartitioner,
} as const;

/**
 * Runs a producer call; once one has been fenced, every later call fails at once with the same error.
 * Any failure also forgets the cached coordinators (coordinator-cache.ts).
 */
type Guard = <T>(fn: () => Promise<T>) => Promise<T>;

function fencingGuard(): Guard {
  let fenced: FencedError | undefined;
  return async (fn) => {
    if (fenced) throw fenced;
    try {
      return await fn();
    } catch (err) {
      // The coordinator may have moved: the next lookup asks the cluster again.
      forgetCoordinators();
      if (err instanceof FencedError) fenced = err;
      throw err;
    }
  };
}

/** kafkajs's topic messages of a send; `cuttable`: one fix 15 may refuse (see sendInBatches). */
function topicMessagesOf(records: OutgoingRecord[], cuttable = false): TopicMessages[] {
  const topicMessages = toTopicMessages(records);
  if (cuttable) for (const { messages } of topicMessages) cuttableMessages.add(messages);
  return topicMessages;
}

const NONE: ReadonlySet<string> = new Set();

/**
 * Sends records through a kafkajs producer's or transaction's `sendBatch`, in one produce request,
 * or, when one partition's share would outgrow a record batch (kafkajs.ts's fix 15 refuses such a
 * send before any request), in consecutive requests of at most `MAX_SEND_BYTES` each (sendChunks),
 * in order; with a record of an `unbatched` topic in each at most. A MESSAGE_TOO_LARGE names the
 * largest record.
 */
async function sendInBatches(
  sender: Pick<KafkajsProducer, 'sendBatch'>,
  records: OutgoingRecord[],
  compression: number,
  what: string,
  unbatched: ReadonlySet<string> = NONE,
): Promise<void> {
  if (records.length === 0) return;
  const send = (chunk: OutgoingRecord[], cuttable?: boolean) =>
    sender.sendBatch({ topicMessages: topicMessagesOf(chunk, cuttable), acks: -1, compression });
  let chunk = records;
  const cut = async () => {
    for (chunk of sendChunks(records, MAX_SEND_BYTES, unbatched)) await send(chunk);
  };
  try {
    // Most sends have no unbatched topic: no look at their records then (hot path).
    if (unbatched.size > 0 && records.some((r) => unbatched.has(r.topic))) await cut();
    else {
      try {
        await send(records, true);
      } catch (err) {
        if (!PartitionBatchTooLargeError.is(err)) throw err;
        await cut();
      }
    }
  } catch (err) {
    if (!hasErrorType(err, 'MESSAGE_TOO_LARGE')) throw toKafkaError(err, what);
    // The broker names neither the topic nor the record: a clue for whoever must raise a limit.
    const { bytes, topic } = largestRecord(chunk);
    throw toKafkaError(
      err,
      `${what} (largest record ${bytes} bytes as a batch, for topic ${topic}: ` +
        'raise its max.message.bytes, or find what made the record that large)',
    );
  }
}

function wrapTransaction(tx: KafkajsTransaction, guard: Guard, compression: number): Transaction {
  const steps = stepsOf(tx, compression);
  return {
    send: (records, options) => guard(() => steps.send(records, options)),
    sendOffsets: (offsets) => guard(() => steps.sendOffsets(offsets)),
    commit: () => guard(() => steps.commit()),
    // An abort after fencing is pointless (the broker already aborted) and would fail again.
    abort: () => guard(() => steps.abort()),
  };
}

function stepsOf(tx: KafkajsTransaction, compression: number): Transaction {
  return {
    send: (records, options) =>
      sendInBatches(tx, records, compression, 'send in transaction failed', options?.unbatchedTopics),
    async sendOffsets({ groupId, offsets, membership }) {
      if (offsets.length === 0) return;
      const byTopic = new Map<string, { partition: number; offset: string }[]>();
      for (const o of offsets) {
        const list = byTopic.get(o.topic) ?? [];
        list.push({ partition: o.partition, offset: o.offset });
        byTopic.set(o.topic, list);
      }
      const topics = [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
      if (membership) offsetsMemberships.set(topics, membership);
      try {
        await tx.sendOffsets({ consumerGroupId: groupId, topics });
      } catch (err) {
        if (membership && isStaleMember(err)) {
          throw new MemberFencedError(
            `committing offsets in transaction failed: group ${groupId} no longer has member ` +
              `${membership.memberId} in generation ${membership.generationId} (its session ` +
              'expired, and its partitions went to other members)',
            { cause: err },
          );
        }
        throw toKafkaError(err, 'committing offsets in transaction failed');
      }
    },
    async commit() {
      try {
        await tx.commit();
      } catch (err) {
        throw toKafkaError(err, 'commit failed');
      }
    },
    async abort() {
      if (!tx.isActive()) return;
      try {
        await tx.abort();
      } catch (err) {
        throw toKafkaError(err, 'abort failed');
      }
    },
  };
}

/**
 * A transactional producer. Creating it runs the transactional InitProducerId, which fences any older producer with
 * the same transactional id and aborts (or completes) the transaction it left open.
 */
export async function createTransactionalProducer(
  kafka: Kafka,
  options: TransactionalProducerOptions,
  compression: KafkaCompression = 'none',
): Promise<TransactionalProducer> {
  const codec = CODEC_IDS[compression];
  const keptOnV1 = options.transactionProtocol === 'v1';
  if (keptOnV1) keepTransactionProtocolV1(options.transactionalId);
  const release = () => {
    if (keptOnV1) releaseTransactionProtocol(options.transactionalId);
  };
  /** A kafkajs producer with its producer id: InitProducerId, which fences older instances. */
  const open = async (signal?: AbortSignal): Promise<KafkajsProducer> => {
    const created = kafka.producer({
      transactionalId: options.transactionalId,
      transactionTimeout: options.transactionTimeoutMs ?? 60_000,
      ...producerOptions,
    });
    const initialising = (async () => {
      await created.connect();
      // kafkajs runs the transactional InitProducerId lazily, at the first transaction: begin and
      // abort an empty one now so that creating this producer fences any older instance at once.
      const first = await created.transaction();
      await first.abort();
    })();
    try {
      await connectedUnlessAborted(
        initialising,
        signal,
        `initialising transactional producer ${options.transactionalId}`,
        () => created.disconnect(),
      );
      return created;
    } catch (err) {
      await created.disconnect().catch(() => {});
      throw toKafkaError(err, `initialise transactional producer ${options.transactionalId}`);
    }
  };
  let producer: KafkajsProducer;
  try {
    producer = await open(options.signal);
  } catch (err) {
    release();
    throw err;
  }
  let guard = fencingGuard();
  const begin = (): Promise<Transaction> =>
    guard(async () => {
      try {
        return wrapTransaction(await producer.transaction(), guard, codec);
      } catch (err) {
        throw toKafkaError(err, 'begin transaction failed');
      }
    });
  const runTransaction = async (records: OutgoingRecord[], txOptions: TransactionOptions) => {
    const tx = await begin();
    try {
      await tx.send(records, txOptions);
      if (txOptions.consumerOffsets) await tx.sendOffsets(txOptions.consumerOffsets);
      await tx.commit();
    } catch (err) {
      await tx.abort().catch(() => {});
      throw err;
    }
  };
  return {
    begin,
    async transaction(records, txOptions: TransactionOptions = {}) {
      try {
        await runTransaction(records, txOptions);
      } catch (err) {
        if (!hasErrorType(err, 'INVALID_PRODUCER_ID_MAPPING')) throw err;
        // The coordinator no longer knows this producer's id: a transactional id left without a
        // transaction for `transactional.id.expiration.ms` (7 days by default) is forgotten, an idle
        // verifier's for instance. Nothing of this transaction is committed (an id it does not know
        // has no transaction there). A new producer id and the same transaction again, as a restart
        // would do, without the restart; a second refusal is reported as fencing.
        await producer.disconnect().catch(() => {});
        producer = await open();
        guard = fencingGuard();
        await runTransaction(records, txOptions);
      }
    },
    async close() {
      try {
        await producer.disconnect();
      } finally {
        release();
      }
    },
  };
}

/** An idempotent, non-transactional producer (requesters, tests). */
export async function createProducer(
  kafka: Kafka,
  compression: KafkaCompression = 'none',
): Promise<Producer> {
  const codec = CODEC_IDS[compression];
  const producer = kafka.producer(producerOptions);
  try {
    await producer.connect();
  } catch (err) {
    // Its connection may be open (a broker that accepted it and never answered): the caller gets no
    // producer to close, and the socket would keep its process alive.
    await producer.disconnect().catch(() => {});
    throw toKafkaError(err, 'connect producer');
  }
  return {
    send: (records) => sendInBatches(producer, records, codec, 'send failed'),
    async close() {
      await producer.disconnect();
    },
  };
}
