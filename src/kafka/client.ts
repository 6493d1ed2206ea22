import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { KafkaConfig as KafkajsConfig, SASLOptions } from '@fraudlink/kafkajs';
import type { KafkaConfig } from '../config/index.ts';
import type { Logger } from '../logger.ts';
import { wrapAdmin } from './admin.ts';
import { connectedUnlessAborted } from './connect.ts';
import { createGroupConsumer } from './consumer.ts';
import { cacheCoordinatorLookups } from './coordinator-cache.ts';
import { toKafkaError } from './errors.ts';
import kafkajs from './kafkajs.ts';
import { pinoLogCreator } from './logging.ts';
import { createOAuthTokenSource } from './oauth.ts';
import { createProducer, createTransactionalProducer } from './producer.ts';
import { readRecordFrom } from './read-record.ts';
import { readTopic } from './read-topic.ts';
import { noDelaySocketFactory } from './socket.ts';
import type { KafkaAdmin, KafkaClient } from './types.ts';

// kafkajs is CommonJS: its values come through the default export.
const { Kafka } = kafkajs;

export interface KafkaClientOptions {
  config: KafkaConfig;
  logger: Logger;
  /** Client-level retries of connections and metadata calls; probes want few. */
  retry?: { retries: number; initialRetryTime: number };
  /** How long a request waits for the broker's answer (default 30 s); probes want less. */
  requestTimeoutMs?: number;
}

function saslOf(config: KafkaConfig, logger: Logger): SASLOptions | undefined {
  const sasl = config.sasl;
  if (!sasl) return undefined;
  if (sasl.mechanism === 'oauthbearer') {
    const tokens = createOAuthTokenSource(sasl, logger);
    return { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: await tokens.token() }) };
  }
  return { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as SASLOptions;
}

/**
 * kafkajs's `ssl`: Node's TLS options with the KAFKA_TLS_* files (read here; the configuration has
 * checked them at start). Node verifies the broker's certificate against `ca` (else its own CA list)
 * and its host name (`checkServerIdentity`): neither is ever switched off.
 */
export function tlsOptionsOf(config: KafkaConfig): boolean | ConnectionOptions {
  if (!config.ssl) return false;
  const files = config.tls;
  if (!files) return true;
  return {
    ...(files.caFile && { ca: readFileSync(files.caFile) }),
    ...(files.certFile && { cert: readFileSync(files.certFile) }),
    ...(files.keyFile && { key: readFileSync(files.keyFile) }),
  };
}

export function createKafkaClient({
  config,
  logger,
  retry,
  requestTimeoutMs = 30_000,
}: KafkaClientOptions): KafkaClient {
  const log = logger.child({ component: 'kafkajs' });
  cacheCoordinatorLookups();
  const options: KafkajsConfig = {
    clientId: config.clientId,
    brokers: config.brokers,
    ssl: tlsOptionsOf(config),
    connectionTimeout: 5000,
    requestTimeout: requestTimeoutMs,
    logCreator: pinoLogCreator(log),
    retry: retry ?? { initialRetryTime: 100, retries: 8 },
    socketFactory: noDelaySocketFactory,
  };
  const sasl = saslOf(config, log);
  if (sasl) options.sasl = sasl;
  const kafka = new Kafka(options);

  const admin = async ({ signal }: { signal?: AbortSignal } = {}): Promise<KafkaAdmin> => {
    const a = kafka.admin();
    try {
      await connectedUnlessAborted(a.connect(), signal, 'connecting an admin client', () => a.disconnect());
    } catch (err) {
      // As a producer's (producer.ts): the caller gets nothing to close.
      await a.disconnect().catch(() => {});
      throw toKafkaError(err, 'connect admin');
    }
    return wrapAdmin(a);
  };

  return {
    admin,
    transactionalProducer: (o) => createTransactionalProducer(kafka, o, config.compression),
    producer: () => createProducer(kafka, config.compression),
    groupConsumer: (o) => createGroupConsumer(kafka, o),
    async readTopic(topic, onRecords, o) {
      // With the broker away, connecting runs through kafkajs's retries (tens of seconds): an abort
      // (SIGTERM) must not wait them out.
      let a: KafkaAdmin;
      try {
        a = await admin(o?.signal && { signal: o.signal });
      } catch (err) {
        if (o?.follow && o.signal?.aborted) return;
        throw err;
      }
      try {
        await readTopic(kafka, a, topic, onRecords, o);
      } finally {
        await a.close();
      }
    },
    async readRecordFrom(topic, partition, offset, o) {
      const a = await admin(o.signal && { signal: o.signal });
      try {
        return await readRecordFrom(kafka, a, topic, partition, offset, o);
      } finally {
        await a.close();
      }
    },
  };
}
