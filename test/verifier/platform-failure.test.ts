import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  FencedError,
  KafkaAuthenticationError,
  KafkaError,
  KafkaTlsError,
  SchemaRegistryError,
  UpstreamUnauthorizedError,
} from '../../src/errors.ts';
import { isPlatformFailure } from '../../src/verifier/platform-failure.ts';

/** An error as kafkajs reports a broker's answer. */
const kafkajsError = (type: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type, ...extra });

describe('isPlatformFailure', () => {
  it('is true for what only an operator fixes: fencing, refused credentials and authorizations, configuration, our own topics refusing records', () => {
    const platform = [
      new FencedError('fenced'),
      new UpstreamUnauthorizedError('401', { status: 401 }),
      new ConfigError([{ variable: 'KAFKA_BROKERS', message: 'missing' }]),
      new KafkaError('commit', { cause: kafkajsError('GROUP_AUTHORIZATION_FAILED') }),
      new KafkaError('commit', { cause: kafkajsError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED') }),
      new KafkaError('connect', {
        cause: Object.assign(new Error('SASL PLAIN authentication failed'), {
          name: 'KafkaJSSASLAuthenticationError',
        }),
      }),
      new KafkaError('commit', {
        cause: kafkajsError('MESSAGE_TOO_LARGE', {
          topicErrors: [
            { topic: 'vop.verification.requests.dlq.v1', partition: 0, type: 'MESSAGE_TOO_LARGE' },
          ],
        }),
      }),
      new SchemaRegistryError('registering failed', {
        cause: Object.assign(new Error('403'), { status: 403 }),
      }),
      new KafkaError('the unreadable request cannot be copied to the DLQ', { retriable: false }),
      new KafkaError('connect', {
        cause: new KafkaAuthenticationError('the broker refused the TLS client certificate', [
          'KAFKA_TLS_CERT',
        ]),
      }),
      new KafkaError('connect', {
        cause: new KafkaTlsError("the broker's TLS certificate was not accepted"),
      }),
    ];
    for (const err of platform) expect(isPlatformFailure(err), err.message).toBe(true);
  });

  it('is false for outages: the broker or the registry unreachable, a transaction the broker could not finish', () => {
    const outages = [
      new KafkaError('send in transaction failed: connect ECONNREFUSED', {
        retriable: true,
        cause: Object.assign(new Error('connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' }),
      }),
      new KafkaError('commit: The coordinator is not available', {
        cause: kafkajsError('COORDINATOR_NOT_AVAILABLE', { retriable: true }),
      }),
      new KafkaError('commit: Request timed out', {
        cause: Object.assign(new Error('Request timed out'), { name: 'KafkaJSRequestTimeoutError' }),
      }),
      new SchemaRegistryError('registering failed: ECONNREFUSED', { retriable: true }),
      new SchemaRegistryError('reading schema id 7 failed: 503', {
        retriable: true,
        cause: Object.assign(new Error('503'), { status: 503 }),
      }),
      new Error('an error of unknown kind'),
    ];
    for (const err of outages) expect(isPlatformFailure(err), err.message).toBe(false);
  });
});
