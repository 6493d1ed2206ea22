import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { exitCodeFor, KafkaAuthenticationError, KafkaError, KafkaTlsError } from '../../src/errors.ts';
import { toKafkaError } from '../../src/kafka/errors.ts';
import '../../src/kafka/kafkajs.ts';
import { kafkajsPath } from '../../src/kafka/kafkajs-path.ts';

const require = createRequire(import.meta.url);
// The class kafkajs's connections throw, as they see it once fraudlink's copy is loaded.
const { KafkaJSConnectionError, KafkaJSSASLAuthenticationError } = require(kafkajsPath('errors.js')) as {
  KafkaJSConnectionError: new (
    m: string,
    o?: { broker?: string; code?: string },
  ) => Error & { retriable: boolean };
  KafkaJSSASLAuthenticationError: new (m: string) => Error;
};

const socketError = (code: string) =>
  new KafkaJSConnectionError(`Connection error: ${code}`, { broker: 'b:9093', code });

describe("Kafka's refusals of fraudlink's TLS settings and credentials", () => {
  it('makes kafkajs give up at once on a broker certificate it cannot verify or a refused client certificate', () => {
    for (const code of [
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
    ]) {
      expect(socketError(code).retriable, code).toBe(false);
    }
    // A broker away stays an outage, retried.
    expect(socketError('ECONNREFUSED').retriable).toBe(true);
    expect(new KafkaJSConnectionError('Connection timeout').retriable).toBe(true);
  });

  it('types each refusal, with the exit code of a setting to fix or of refused credentials', () => {
    const untrusted = toKafkaError(socketError('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 'connect admin');
    expect(untrusted).toBeInstanceOf(KafkaTlsError);
    expect(untrusted.message).toContain('KAFKA_TLS_CA');
    expect(exitCodeFor(untrusted)).toBe(2);

    const noCert = toKafkaError(socketError('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'), 'connect admin');
    expect(noCert).toBeInstanceOf(KafkaAuthenticationError);
    expect(noCert.message).toContain('KAFKA_TLS_CERT');
    expect(exitCodeFor(noCert)).toBe(3);

    const scram = toKafkaError(
      new KafkaJSSASLAuthenticationError('SASL SCRAM SHA512 authentication failed: invalid credentials'),
      'connect producer',
    );
    expect(scram).toBeInstanceOf(KafkaAuthenticationError);
    expect((scram as KafkaAuthenticationError).variables).toEqual([
      'KAFKA_SASL_USERNAME',
      'KAFKA_SASL_PASSWORD',
    ]);
    expect(exitCodeFor(scram)).toBe(3);

    const oauth = toKafkaError(
      new KafkaJSSASLAuthenticationError('SASL OAUTHBEARER authentication failed: invalid token'),
      'connect producer',
    );
    expect((oauth as KafkaAuthenticationError).variables).toContain('KAFKA_SASL_OAUTH_CLIENT_ID');

    const away = toKafkaError(socketError('ECONNREFUSED'), 'connect admin');
    expect(away).toBeInstanceOf(KafkaError);
    expect(away).toMatchObject({ retriable: true });
  });
});
