import type { ApiClient } from '../api/index.ts';
import type { VerifierConfig } from '../config/index.ts';
import { AbortedError, DecodeError, FraudlinkError } from '../errors.ts';
import {
  DLQ_TRUNCATED_HEADER,
  type Encoder,
  type FitForDlqOptions,
  fitForDlq,
  type IncomingRecord,
  isReadOnlyRegistry,
  isSchemaRefusal,
  type OutgoingRecord,
  refusedTopicsOf,
  type SchemaRegistryClient,
  type UnreadableBatch,
} from '../kafka/index.ts';
import { clip, type Logger, maskIban } from '../logger.ts';
import { unlessAborted } from '../retry.ts';
import { SchemaNames } from '../schemas.ts';
import type { VerifierMetrics } from './metrics.ts';
import { countMovedReply, type RefusedReplyTopics } from './refused-topics.ts';
import { completed, failed, toJson, type VerificationResult } from './reply.ts';
import {
  correlationIdOf,
  deadlineOf,
  formatOf,
  MAX_ERROR_MESSAGE,
  MAX_KEY_BYTES,
  parseJsonRequest,
  RequestErrorCodes,
  recordLimitRefusal,
  replyRouteOf,
  type Validated,
  validateRequest,
} from './request.ts';

export interface HandlerDeps {
  config: VerifierConfig['verifier'];
  api: Pick<ApiClient, 'verify'>;
  registry: SchemaRegistryClient;
  /** The reply encoder of a topic (registered on first use). */
  replyEncoder(topic: string): Promise<Encoder<VerificationResult>>;
  /**
   * A reply topic's partition count, 0 when it does not exist: replies to a missing topic go to the
   * default topic, and a `kafka_replyPartition` the topic does not have is ignored.
   */
  partitionCount(topic: string): Promise<number>;
  /**
   * The DLQ topic's `max.message.bytes`. A copy larger than that would fail its whole transaction at
   * the broker (MESSAGE_TOO_LARGE, final), and every restart after it again: it is cut down to fit
   * instead (`fitForDlq`), with a `dlq-truncated` header giving its size before.
   */
  dlqMaxBytes: number;
  metrics: VerifierMetrics;
  logger: Logger;
  now?: () => number;
  /**
   * Custom reply topics the broker refuses the verifier (refused-topics.ts): their replies go to the
   * default topic. A topic whose metadata the broker refuses (no Describe ACL) is added, and one whose
   * subject the registry refuses the reply schema (its Avro replies only).
   */
  refusedReplyTopics?: RefusedReplyTopics;
}

type Parsed = Validated | { ok: false; code: string; message: string; unreadable: true };

/** The request read and validated, unless its key or headers pass a limit (recordLimitRefusal). */
async function parse(record: IncomingRecord, deps: HandlerDeps): Promise<Parsed> {
  const tooLarge = recordLimitRefusal(record.key, record.headers);
  if (tooLarge) return { ok: false, ...tooLarge };
  if (record.value === null || record.value.length === 0) {
    return { ok: false, code: RequestErrorCodes.UNREADABLE, message: 'value is empty', unreadable: true };
  }
  if (formatOf(record.headers) === 'json') return parseJsonRequest(record.value);
  try {
    const decoded = await deps.registry.decode(record.value);
    if (decoded.name !== SchemaNames.VerificationRequest) {
      return {
        ok: false,
        code: RequestErrorCodes.UNREADABLE,
        message: `value is a ${decoded.name}, not a VerificationRequest`,
        unreadable: true,
      };
    }
    return validateRequest(decoded.value);
  } catch (err) {
    if (err instanceof DecodeError)
      return {
        ok: false,
        code: RequestErrorCodes.UNREADABLE,
        // A decoder's message may quote the value.
        message: clip(err.message, MAX_ERROR_MESSAGE),
        unreadable: true,
      };
    throw err;
  }
}

function requestHeaders(record: IncomingRecord): Record<string, Buffer> {
  const headers: Record<string, Buffer> = {};
  for (const [name, value] of Object.entries(record.headers)) if (value !== undefined) headers[name] = value;
  return headers;
}

/**
 * A custom reply topic's partition count (0: no such topic), or undefined when the broker refuses
 * the verifier that topic, counted and logged: lately (refusedReplyTopics), or now its metadata,
 * which Kafka refuses with TOPIC_AUTHORIZATION_FAILED to a client that may not Describe the topic,
 * before any Produce. Remembered then, as a refused transaction is.
 */
async function customTopicPartitions(
  topic: string,
  requestId: string,
  deps: HandlerDeps,
  partitionCount: (topic: string) => Promise<number>,
): Promise<number | undefined> {
  const { refusedReplyTopics: refused } = deps;
  if (refused?.has(topic)) {
    countMovedReply(
      deps,
      { requestId, refused: topic },
      'kafka_replyTopic refused by the broker lately; replying on the default topic',
    );
    return undefined;
  }
  try {
    return await partitionCount(topic);
  } catch (err) {
    if (!refusedTopicsOf(err).includes(topic)) throw err;
    refused?.refuse(topic);
    countMovedReply(
      deps,
      { err, requestId, refused: topic, refusedForMs: refused?.ttlMs },
      "the broker refuses kafka_replyTopic's metadata (no Describe ACL for the verifier, an invalid name, ...); replying on the default topic",
    );
    return undefined;
  }
}

/** The reply record: routed by `kafka_replyTopic`/`kafka_replyPartition`, in the request's format. */
async function replyRecord(
  record: IncomingRecord,
  requestId: string,
  result: VerificationResult,
  deps: HandlerDeps,
  signal: AbortSignal | undefined,
): Promise<OutgoingRecord> {
  const { config, logger } = deps;
  const partitionCount = (topic: string) => unlessAborted(deps.partitionCount(topic), signal, 'reply lookup');
  const route = replyRouteOf(record.headers, {
    defaultTopic: config.repliesTopic,
    allowed: config.replyTopicsAllowed,
    own: config.ownTopics,
  });
  if (route.unreadablePartition !== undefined) {
    logger.warn(
      { requestId: clip(requestId), bytes: route.unreadablePartition },
      'kafka_replyPartition is not a 4-byte big-endian int; replying on the partition of the key',
    );
  }
  if (route.refusedTopic !== undefined) {
    countMovedReply(
      deps,
      { requestId, refused: route.refusedTopic, reason: route.refusedBecause },
      `kafka_replyTopic refused (${route.refusedBecause}); replying on the default topic`,
    );
  } else if (route.topic !== config.repliesTopic) {
    const partitions = await customTopicPartitions(route.topic, requestId, deps, partitionCount);
    if (partitions === 0) {
      logger.warn(
        { requestId: clip(requestId), topic: route.topic },
        'reply topic does not exist; replying on the default topic',
      );
    }
    if (!partitions) {
      route.topic = config.repliesTopic;
      delete route.partition;
    }
  }
  if (route.partition !== undefined) {
    // kafkajs silently leaves out a record for a partition the topic lacks, and the transaction
    // would commit the request's offset without its reply.
    const partitions = await partitionCount(route.topic);
    if (route.partition < 0 || route.partition >= partitions) {
      logger.warn(
        { requestId: clip(requestId), topic: route.topic, partition: route.partition, partitions },
        'kafka_replyPartition out of range for the reply topic; replying on the partition of the key',
      );
      delete route.partition;
    }
  }
  const headers: Record<string, Buffer | string> = {};
  const correlation = correlationIdOf(record.headers, requestId);
  if (correlation) headers.kafka_correlationId = correlation;
  let value: Buffer;
  if (formatOf(record.headers) === 'json') {
    headers['content-type'] = 'application/json';
    value = toJson(result);
  } else {
    const encoderOf = (topic: string) => unlessAborted(deps.replyEncoder(topic), signal, 'reply lookup');
    const refused = deps.refusedReplyTopics;
    let encoder: Encoder<VerificationResult> | undefined;
    if (route.topic !== config.repliesTopic && refused?.schemaRefused(route.topic)) {
      countMovedReply(
        deps,
        { requestId, refused: route.topic },
        "the registry refused the reply schema for kafka_replyTopic's subject lately; replying on the default topic",
      );
    } else {
      try {
        encoder = await encoderOf(route.topic);
      } catch (err) {
        // The registry refuses the result schema under the requester's topic's subject (another
        // schema registered there, incompatible), or takes no writes for now (read-only) and so
        // cannot register it under a subject new to it: either stays so at every restart (the
        // request is delivered again), and stopping would stop the verifier for every requester.
        // Any other failure (a registry that cannot answer, refused credentials) is not that
        // requester's doing: it stops the verifier, as on the default topic, whose subject was
        // registered at start. Remembered as a broker's refusal is: later requests do not ask again.
        const readOnly = isReadOnlyRegistry(err);
        if (route.topic === config.repliesTopic || !(readOnly || isSchemaRefusal(err))) throw err;
        refused?.refuseSchema(route.topic);
        countMovedReply(
          deps,
          { err, requestId, refused: route.topic, refusedForMs: refused?.ttlMs },
          readOnly
            ? "the registry takes no writes now (read-only): the reply schema cannot be registered under kafka_replyTopic's subject; replying on the default topic"
            : "the registry refuses the reply schema for kafka_replyTopic's subject; replying on the default topic",
        );
      }
    }
    if (encoder === undefined) {
      route.topic = config.repliesTopic;
      delete route.partition;
      encoder = await encoderOf(route.topic);
    }
    value = encoder.encode(result);
  }
  return {
    topic: route.topic,
    key: requestId,
    value,
    headers,
    ...(route.partition !== undefined && { partition: route.partition }),
  };
}

/**
 * `copy` as the DLQ topic takes it (cut down when larger than `dlqMaxBytes`, logged), counted in
 * the DLQ metric under `code`.
 */
function toDlq(
  copy: OutgoingRecord,
  code: string,
  source: IncomingRecord,
  deps: HandlerDeps,
  options?: FitForDlqOptions,
): OutgoingRecord {
  const fitted = fitForDlq(copy, deps.dlqMaxBytes, options);
  if (fitted !== copy) {
    deps.logger.warn(
      {
        code,
        partition: source.partition,
        offset: source.offset,
        bytes: Number(fitted.headers?.[DLQ_TRUNCATED_HEADER]),
        dlqMaxBytes: deps.dlqMaxBytes,
      },
      "the DLQ copy is larger than the DLQ topic's max.message.bytes: cut down to fit",
    );
  }
  deps.metrics.dlq.inc({ code });
  return fitted;
}

/**
 * The DLQ record of a record batch of the requests topic that could not be read (it did not
 * decompress, or would pass the reader's bound): its compressed bytes as the value when they fit,
 * and headers naming the batch. No reply: no request of it can be read, nor its key.
 */
function unreadableBatchCopy(
  record: IncomingRecord,
  batch: UnreadableBatch,
  deps: HandlerDeps,
): OutgoingRecord {
  const code = RequestErrorCodes.BATCH_UNREADABLE;
  deps.logger.warn(
    {
      code,
      partition: record.partition,
      firstOffset: batch.firstOffset,
      lastOffset: batch.lastOffset,
      codec: batch.codec,
      bytes: batch.bytes,
      reason: batch.reason,
    },
    'a record batch of the requests topic cannot be read: sent to the DLQ, its requests unanswered',
  );
  const copy: OutgoingRecord = {
    topic: deps.config.dlqTopic,
    key: null,
    value: batch.data,
    headers: {
      'error-code': code,
      'error-message': batch.reason,
      'source-topic': record.topic,
      'source-partition': String(record.partition),
      'source-offset-first': batch.firstOffset,
      'source-offset-last': batch.lastOffset,
      'source-codec': batch.codec,
    },
  };
  // Compressed bytes cut short decompress to nothing: left out whole when they do not fit.
  return toDlq(copy, code, record, deps, { value: 'drop' });
}

/**
 * stop() gave up on the request (it drops the request's partitions before it aborts `signal`), and
 * `err` is its upstream call or reply lookup ended so: no reply is made or counted here, and whoever
 * owns the partition next answers it.
 */
function abandoned(err: unknown, signal: AbortSignal | undefined): boolean {
  return err instanceof AbortedError && signal?.aborted === true;
}

/**
 * Turns one request record into the records that answer it: exactly one reply, and a DLQ copy when
 * unreadable; an invalid request without an id (record key) gets only the DLQ copy.
 */
export async function handleRequest(
  record: IncomingRecord,
  deps: HandlerDeps,
  /**
   * Ends the upstream call and the reply's topic and schema lookups (a stop that could not wait for
   * them); the request is then not answered here.
   */
  signal?: AbortSignal,
): Promise<OutgoingRecord[]> {
  if (record.unreadableBatch) return [unreadableBatchCopy(record, record.unreadableBatch, deps)];
  const now = deps.now ?? Date.now;
  const { config, metrics, logger } = deps;
  // A key over MAX_KEY_BYTES is no usable id (parse refuses it): that request goes to the DLQ.
  const key =
    record.key === null || record.key.length > MAX_KEY_BYTES ? null : record.key.toString('utf8') || null;
  const parsed = await parse(record, deps);
  const out: OutgoingRecord[] = [];
  let result: VerificationResult | undefined;
  let requestId = key;

  if (!parsed.ok) {
    // Unreadable, or invalid without an id to answer to: kept in the DLQ rather than dropped (SPEC §7).
    if ('unreadable' in parsed || requestId === null) {
      const copy: OutgoingRecord = {
        topic: config.dlqTopic,
        key: record.key,
        value: record.value,
        // The request's own headers (content-type, correlation id, reply topic, deadline) stay with
        // it, so that whoever repairs it can answer or send it again as it was meant.
        headers: {
          ...requestHeaders(record),
          'error-code': parsed.code,
          'error-message': parsed.message,
          'source-topic': record.topic,
          'source-partition': String(record.partition),
          'source-offset': record.offset,
        },
      };
      out.push(toDlq(copy, parsed.code, record, deps));
    }
    if (requestId !== null)
      result = failed(requestId, 'INVALID_REQUEST', { code: parsed.code, message: parsed.message }, now());
    else
      logger.warn(
        { code: parsed.code, partition: record.partition, offset: record.offset },
        'request without an id: no reply possible; sent to the DLQ',
      );
  } else {
    const request = parsed.request;
    requestId = key ?? request.requestId;
    const asked = deadlineOf(
      record.headers,
      request.requestedAt || record.timestamp,
      config.defaultDeadlineMs,
    );
    // A deadline further away than VERIFY_MAX_DEADLINE_MS is brought in: replies commit in offset
    // order, and one request retried upstream without end would hold back its partition's replies.
    const deadline = asked === null ? null : Math.min(asked, now() + config.maxDeadlineMs);
    if (deadline === null) {
      const error = {
        code: RequestErrorCodes.DEADLINE_INVALID,
        message: 'vop-deadline is neither epoch milliseconds in decimal nor an 8-byte big-endian long',
      };
      result = failed(requestId, 'INVALID_REQUEST', error, now());
    } else if (now() >= deadline) {
      result = failed(
        requestId,
        'EXPIRED',
        { code: 'DEADLINE_PASSED', message: 'the deadline passed before the request was read' },
        now(),
      );
    } else {
      // Checked first: masking the IBAN for a line that is not written would cost every verification.
      const debug = logger.isLevelEnabled('debug');
      if (debug)
        logger.debug({ requestId: clip(requestId), iban: maskIban(request.iban) }, 'asking upstream');
      const started = performance.now();
      metrics.inFlight.inc();
      try {
        const answer = await deps.api.verify(
          { iban: request.iban, party: { name: request.partyName } },
          {
            // The API client ends an attempt at the deadline and does not back off past it.
            deadline,
            retry: { retries: Number.POSITIVE_INFINITY, initialDelayMs: 50, maxDelayMs: 1000 },
            ...(signal && { signal }),
          },
        );
        const latency = performance.now() - started;
        metrics.upstreamLatency.observe(latency / 1000);
        result = completed(requestId, answer, now(), Math.round(latency));
      } catch (err) {
        // Ended by stop() at its drain timeout, not by the upstream: no FAILED answer to count.
        if (abandoned(err, signal)) return [];
        const latency = Math.round(performance.now() - started);
        const code = err instanceof FraudlinkError ? err.code : 'UPSTREAM_FAILED';
        // Refused credentials fail every request alike: stop (exit 3, SPEC §4) rather than answer FAILED
        // to all of them. The request stays uncommitted and is answered once the key is fixed. So
        // does an upstream that is the sandbox (exit 2): its made-up answer is no reply to commit.
        if (code === 'UPSTREAM_UNAUTHORIZED' || code === 'CONFIG_INVALID') throw err;
        result = failed(requestId, 'FAILED', { code, message: (err as Error).message }, now(), latency);
      } finally {
        metrics.inFlight.dec();
      }
      if (debug)
        logger.debug(
          { requestId: clip(requestId), iban: maskIban(request.iban), outcome: result.outcome },
          'verified',
        );
    }
  }

  if (result && requestId !== null) {
    try {
      out.push(await replyRecord(record, requestId, result, deps, signal));
    } catch (err) {
      if (abandoned(err, signal)) return [];
      throw err;
    }
    metrics.requests.inc({ outcome: result.outcome, match: result.nameMatch ?? 'none' });
  }
  return out;
}
