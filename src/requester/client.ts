import { randomUUID } from 'node:crypto';
import type { KafkaConfig, RegistryConfig, VerifierConfig } from '../config/index.ts';
import { AbortedError, DecodeError, FraudlinkError, InvalidInputError, TimeoutError } from '../errors.ts';
import {
  createKafkaClient,
  createSchemaRegistry,
  type Encoder,
  type GroupConsumer,
  type IncomingRecord,
  type OutgoingRecord,
  type Producer,
  type SchemaRegistryClient,
} from '../kafka/index.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { loadSchema, SchemaNames } from '../schemas.ts';
import { asVerificationResult, fromJson, type VerificationResult } from '../verifier/reply.ts';
import { formatOf, type VerificationRequest } from '../verifier/request.ts';

export interface VerificationClientConfig {
  kafka: KafkaConfig;
  registry: RegistryConfig;
  requestsTopic?: string;
  /** Where this client reads replies; it must match the verifier's VERIFY_REPLY_TOPICS allow-list. */
  replyTopic?: string;
  /** Request encoding: Avro through the registry (default) or JSON. */
  format?: 'avro' | 'json';
  logger?: Logger;
}

/** A client of the verifier that `config` configures: its broker, registry, requests and default reply topics. */
export function clientConfigOf(
  config: Pick<VerifierConfig, 'kafka' | 'registry' | 'verifier'>,
): VerificationClientConfig {
  return {
    kafka: config.kafka,
    registry: config.registry,
    requestsTopic: config.verifier.requestsTopic,
    replyTopic: config.verifier.repliesTopic,
  };
}

export interface VerificationClient {
  /**
   * Rejects with TimeoutError `timeoutMs` (default 5000) after the call, the client's start-up
   * included: a call made before the client is ready waits for it. The request's `vop-deadline` falls
   * earlier, by a quarter of `timeoutMs` (at most 1 s), so that a reply the deadline causes
   * (EXPIRED, or FAILED after upstream timeouts) reaches the caller instead of the timeout.
   * Rejects with the reply consumer's KafkaError, sending nothing, once that consumer has stopped
   * for good (a crash kafkajs does not restart from); requests then waiting reject with it too.
   * Rejects with InvalidInputError, sending nothing, when `iban` or `partyName` is not a string or
   * `timeoutMs` is not a whole number from 1 to 2^31-1 (the longest a Node timer waits). The
   * verifier judges the values themselves (an INVALID_REQUEST reply). Rejects with the start-up's
   * error when the client could not start (see `ready()`).
   */
  verify(
    request: { iban: string; partyName: string },
    options?: { timeoutMs?: number },
  ): Promise<VerificationResult>;
  /**
   * Replies that arrived after their request timed out, or twice; replies that could not be read
   * (their verify() rejected with the DecodeError or SchemaRegistryError); replies carrying a
   * waiting request's correlation id but another `requestId` (ignored: the request keeps waiting for
   * its own); requests awaiting a reply.
   */
  readonly stats: {
    late: number;
    duplicate: number;
    unreadable: number;
    mismatched: number;
    pending: number;
  };
  /**
   * Resolves once the client can send: the request schema registered (Avro), the reply consumer
   * assigned and the producer connected. Rejects with what stopped it (a reply topic that does not
   * exist, a broker or registry out of reach), also the reason every verify() then rejects with; with
   * AbortedError when close() came first.
   */
  ready(): Promise<void>;
  /**
   * Ends the waiting verify() calls, and any later one, with AbortedError; frees the consumer and
   * producer. Also while the client is still starting (its reply consumer not yet in its group).
   */
  close(): Promise<void>;
}

const ANSWERED_KEPT = 10_000;

/**
 * How much earlier than the caller's timeout a request's `vop-deadline` is: time for the verifier to
 * commit a reply made at the deadline (its group commit, a transaction) and for this client to read
 * it (a fetch of at most 100 ms). A quarter of the timeout, at most 1 s: a 5 s timeout leaves the
 * upstream 4 s; a short one keeps most of its time for the upstream.
 */
function deadlineMarginMs(timeoutMs: number): number {
  return Math.min(1000, Math.round(timeoutMs / 4));
}

/** The longest delay a Node timer keeps: a longer one (or Infinity, NaN) fires after 1 ms. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** verify()'s arguments checked: its timeout, or InvalidInputError when they are not what it takes. */
function checkedArguments(request: unknown, options: { timeoutMs?: unknown }): number {
  const { iban, partyName } = (request ?? {}) as { iban?: unknown; partyName?: unknown };
  if (typeof iban !== 'string' || typeof partyName !== 'string') {
    throw new InvalidInputError(
      'VERIFY_REQUEST',
      `verify() takes { iban, partyName } as strings, got iban: ${typeof iban}, partyName: ${typeof partyName}`,
    );
  }
  const timeoutMs = options.timeoutMs ?? 5000;
  if (
    typeof timeoutMs !== 'number' ||
    !Number.isInteger(timeoutMs) ||
    timeoutMs < 1 ||
    timeoutMs > MAX_TIMEOUT_MS
  ) {
    throw new InvalidInputError(
      'VERIFY_TIMEOUT_MS',
      `timeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, got ${typeof timeoutMs === 'number' ? timeoutMs : typeof timeoutMs}`,
    );
  }
  return timeoutMs;
}

/**
 * A reply's value, or why it cannot be read: DecodeError (not JSON, not Avro of a known schema, not a
 * VerificationResult) or a retriable SchemaRegistryError. The registry client has asked again already
 * (it retries 5xx answers and failed connections, 5 times over ~3 s): no retry here on top.
 */
async function readReply(
  record: IncomingRecord,
  what: string,
  registry: SchemaRegistryClient,
): Promise<{ result: VerificationResult } | { failure: FraudlinkError }> {
  try {
    const result =
      formatOf(record.headers) === 'json'
        ? fromJson(record.value, what)
        : asVerificationResult((await registry.decode(record.value)).value, what);
    return { result };
  } catch (err) {
    return {
      failure: err instanceof FraudlinkError ? err : new DecodeError(`${what} is unreadable`, { cause: err }),
    };
  }
}

interface Pending {
  /** The `requestId` sent: a reply must carry it, whatever its correlation id. */
  requestId: string;
  resolve(result: VerificationResult): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The requester side, for payment systems: `verify()` sends a request with a fresh correlation id and
 * resolves with its reply. The client reads its reply topic with its own consumer (read_committed)
 * and sends nothing before that consumer is assigned, so no early reply is missed.
 *
 * Returns at once, as the README writes it (`createVerificationClient(config).verify(...)`), and starts
 * in the background: `verify()` waits for the start, `ready()` tells when it is done.
 */
export function createVerificationClient(config: VerificationClientConfig): VerificationClient {
  const requestsTopic = config.requestsTopic ?? 'vop.verification.requests.v1';
  const replyTopic = config.replyTopic ?? 'vop.verification.replies.v1';
  const format = config.format ?? 'avro';
  const logger = config.logger ?? silentLogger();
  const kafka = createKafkaClient({ config: config.kafka, logger });
  const registry = createSchemaRegistry(config.registry);
  const pending = new Map<string, Pending>();
  // Set once the reply consumer has stopped for good: every verify() then rejects with it.
  let failure: Error | undefined;
  // Answered correlation ids tell a duplicate reply from a late one. Two generations of at most
  // ANSWERED_KEPT each keep the memory of a long-lived client bounded.
  let answered = new Set<string>();
  let answeredBefore = new Set<string>();
  const remember = (correlation: string) => {
    answered.add(correlation);
    if (answered.size < ANSWERED_KEPT) return;
    answeredBefore = answered;
    answered = new Set();
  };
  const stats = { late: 0, duplicate: 0, unreadable: 0, mismatched: 0, pending: 0 };
  let encoder: Encoder<VerificationRequest> | undefined;

  const consumer: GroupConsumer = kafka.groupConsumer({
    groupId: `fraudlink-requester-${randomUUID()}`,
    topics: [replyTopic],
    isolation: 'read_committed',
    fromBeginning: false,
    autoCommit: false,
    // A rejoin (broker restart, coordinator move) must not skip the replies written meanwhile.
    resumeOnRejoin: true,
    maxWaitMs: 100,
    onCrash(err, restarting) {
      // Restarting, kafkajs rejoins and reads every partition on from its position (resumeOnRejoin).
      if (restarting) {
        logger.warn({ err }, 'reply consumer crashed; it restarts');
        return;
      }
      // Gone for good: no reply can arrive any more, so nothing waits for one or sends for one.
      logger.error({ err }, 'reply consumer stopped for good; verify() fails from now on');
      failure = err;
      for (const [id, p] of pending) {
        clearTimeout(p.timer);
        p.reject(err);
        pending.delete(id);
      }
    },
    eachBatch: async (batch) => {
      for (const record of batch.records) {
        const correlation = record.headers.kafka_correlationId?.toString('utf8');
        if (correlation === undefined) continue;
        const waiting = pending.get(correlation);
        if (!waiting) {
          if (answered.has(correlation) || answeredBefore.has(correlation)) stats.duplicate++;
          else if (correlation.startsWith(clientTag)) stats.late++;
          continue;
        }
        const read = await readReply(
          record,
          `reply to request ${correlation.slice(clientTag.length)}`,
          registry,
        );
        if ('failure' in read) {
          stats.unreadable++;
          logger.warn(
            { err: read.failure, partition: record.partition, offset: record.offset },
            'unreadable reply',
          );
        }
        // Timed out or closed while the registry was asked.
        if (pending.get(correlation) !== waiting) continue;
        // A reply to another request under this one's correlation id (a forged or misrouted one):
        // not this request's answer, which may still come.
        if ('result' in read && read.result.requestId !== waiting.requestId) {
          stats.mismatched++;
          logger.warn(
            {
              partition: record.partition,
              offset: record.offset,
              expected: waiting.requestId,
              got: read.result.requestId.slice(0, 100),
            },
            'a reply with the correlation id of a waiting request answers another requestId; ignored',
          );
          continue;
        }
        pending.delete(correlation);
        remember(correlation);
        clearTimeout(waiting.timer);
        // The reply is the only one its request gets: an unreadable one fails its verify() at once
        // rather than at the timeout.
        if ('failure' in read) waiting.reject(read.failure);
        else waiting.resolve(read.result);
      }
    },
  });
  // Correlation ids of this instance share a prefix, so replies to other clients are not counted as late.
  const clientTag = `${randomUUID().slice(0, 8)}-`;
  let producer: Producer | undefined;
  let closed = false;
  const started = (async () => {
    if (format === 'avro') {
      encoder = await registry.encoder<VerificationRequest>(
        requestsTopic,
        loadSchema(SchemaNames.VerificationRequest),
      );
    }
    if (closed) throw new AbortedError('client closed before it was ready');
    try {
      await consumer.start();
      producer = await kafka.producer();
    } catch (err) {
      // A start that fails (a reply topic that does not exist) has connected already: closed here,
      // or its socket keeps the caller's process alive even when the caller never calls close().
      await consumer.close().catch(() => {});
      // close() ended it: the consumer's close ends a start still waiting for its group's join.
      if (closed) throw new AbortedError('client closed before it was ready', { cause: err });
      throw err;
    }
  })();
  started.catch((err: unknown) => {
    if (closed) return;
    logger.error({ err }, 'the verification client could not start; verify() rejects with this error');
  });

  // The idempotent producer has one request in flight at a time: requests made while a send is under
  // way go together in the next one, so concurrency turns into batches instead of a queue.
  let queued: { record: OutgoingRecord; done: (err?: unknown) => void }[] = [];
  let sending = false;
  const drain = async (): Promise<void> => {
    sending = true;
    while (queued.length > 0) {
      const batch = queued;
      queued = [];
      try {
        // Only sends come here, and they wait for the start, which made the producer.
        await (producer as Producer).send(batch.map((q) => q.record));
        for (const q of batch) q.done();
      } catch (err) {
        for (const q of batch) q.done(err);
      }
    }
    sending = false;
  };
  const sendGrouped = (record: OutgoingRecord) =>
    new Promise<void>((resolve, reject) => {
      queued.push({ record, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!sending) void drain();
    });

  return {
    get stats() {
      return { ...stats, pending: pending.size };
    },
    async ready() {
      await started;
    },
    async verify(request, options = {}) {
      const timeoutMs = checkedArguments(request, options ?? {});
      if (failure) throw failure;
      if (closed) throw new AbortedError('client closed: verify() after close()');
      const requestId = randomUUID();
      const correlation = `${clientTag}${requestId}`;
      const calledAt = Date.now();
      const reply = new Promise<VerificationResult>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(correlation);
          reject(new TimeoutError(`no reply to request ${requestId} within ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(correlation, { requestId, resolve, reject, timer });
      });
      // The timeout or close() may reject it while the start or the send below is still under way,
      // before anyone awaits it: the caller gets that rejection from the promise returned below, so
      // it must not also surface as an unhandled rejection (which ends the caller's process).
      reply.catch(() => {});
      const waiting = pending.get(correlation);
      try {
        // The reply promise rejects first when the call times out or the client closes or fails
        // while it starts.
        await Promise.race([started, reply]);
        if (pending.get(correlation) !== waiting) return await reply;
        const value: VerificationRequest = {
          requestId,
          iban: request.iban,
          partyName: request.partyName,
          requestedAt: calledAt,
        };
        const headers: Record<string, string> = {
          kafka_correlationId: correlation,
          kafka_replyTopic: replyTopic,
          'vop-deadline': String(calledAt + timeoutMs - deadlineMarginMs(timeoutMs)),
        };
        if (format === 'json') headers['content-type'] = 'application/json';
        await sendGrouped({
          topic: requestsTopic,
          key: requestId,
          value: encoder ? encoder.encode(value) : Buffer.from(JSON.stringify(value)),
          headers,
        });
      } catch (err) {
        if (pending.get(correlation) === waiting) {
          clearTimeout(waiting?.timer);
          pending.delete(correlation);
        }
        throw err;
      }
      return reply;
    },
    async close() {
      closed = true;
      for (const [id, p] of pending) {
        clearTimeout(p.timer);
        p.reject(new AbortedError('client closed before the reply arrived'));
        pending.delete(id);
      }
      // The consumer first: its start waits for the group's join, which never comes while kafkajs
      // restarts it after retriable crashes (a broker away), and closing it ends that wait. The
      // producer once the start has ended, so that one it made meanwhile is closed too.
      await consumer.close().catch(() => {});
      await started.catch(() => {});
      await producer?.close().catch(() => {});
    },
  };
}
