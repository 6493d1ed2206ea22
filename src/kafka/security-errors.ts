import { KafkaAuthenticationError, KafkaTlsError } from '../errors.ts';
import { causeChain } from './errors.ts';

/**
 * Node's (OpenSSL's) codes for a broker certificate that failed verification, and for a broker that
 * answers TLS with something else (a clear-text port): a setting is wrong, no retry helps.
 */
const BROKER_CERTIFICATE_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_PACKET_LENGTH_TOO_LONG',
]);

/** The TLS alerts a broker answers a client certificate it requires but lacks or does not trust with. */
const CLIENT_CERTIFICATE_CODES = new Set([
  'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
  'ERR_SSL_TLSV1_ALERT_ACCESS_DENIED',
  'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
]);

function codeOf(err: unknown): string | undefined {
  for (const e of causeChain(err)) {
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      (BROKER_CERTIFICATE_CODES.has(code) || CLIENT_CERTIFICATE_CODES.has(code))
    ) {
      return code;
    }
  }
  return undefined;
}

/** Whether `err` is a TLS failure no retry changes (see BROKER_CERTIFICATE_CODES, CLIENT_CERTIFICATE_CODES). */
export function isTlsRefusal(err: unknown): boolean {
  return codeOf(err) !== undefined;
}

/**
 * `err` as KafkaTlsError or KafkaAuthenticationError when it is Kafka's refusal of fraudlink's
 * TLS or credentials (naming the settings to check), or undefined. `what` says what failed.
 */
export function securityErrorOf(err: unknown, what: string): Error | undefined {
  for (const e of causeChain(err)) {
    if (e instanceof KafkaAuthenticationError || e instanceof KafkaTlsError) return e as Error;
  }
  const code = codeOf(err);
  if (code !== undefined && BROKER_CERTIFICATE_CODES.has(code)) {
    return new KafkaTlsError(
      `${what}: the broker's TLS certificate was not accepted (${code}): KAFKA_TLS_CA must hold the CA that signed it, KAFKA_BROKERS must name a host its certificate names, and the port must be a TLS listener`,
      { cause: err },
    );
  }
  if (code !== undefined) {
    return new KafkaAuthenticationError(
      `${what}: the broker refused the TLS client certificate (${code}): check KAFKA_TLS_CERT and KAFKA_TLS_KEY`,
      ['KAFKA_TLS_CERT', 'KAFKA_TLS_KEY'],
      { cause: err },
    );
  }
  for (const e of causeChain(err)) {
    if (e.name !== 'KafkaJSSASLAuthenticationError') continue;
    const oauth = /OAUTHBEARER/.test(e.message ?? '');
    const variables = oauth
      ? ['KAFKA_SASL_OAUTH_TOKEN_URL', 'KAFKA_SASL_OAUTH_CLIENT_ID']
      : ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'];
    return new KafkaAuthenticationError(
      `${what}: the broker refused the SASL credentials (${e.message}): check ${variables.join(' and ')}`,
      variables,
      { cause: err },
    );
  }
  return undefined;
}
