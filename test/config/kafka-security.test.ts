import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  loadConnectorConfig,
  loadCursorConfig,
  loadReplayConfig,
  loadVerifierConfig,
} from '../../src/config/index.ts';
import { tlsOptionsOf } from '../../src/kafka/client.ts';
import { problemsHiding, useTlsFiles } from './tls-files.ts';

const kafka = { KAFKA_BROKERS: 'kafka-1.psp.example:9093' };
const oauth = {
  KAFKA_SASL_MECHANISM: 'oauthbearer',
  KAFKA_SASL_OAUTH_TOKEN_URL: 'https://login.psp.example/oauth2/token',
  KAFKA_SASL_OAUTH_CLIENT_ID: 'fraudlink',
  KAFKA_SASL_OAUTH_CLIENT_SECRET: 'oauth-client-secret-xyz',
};
const f = useTlsFiles();

/** The problems of loading `env` (reasons in brackets dropped); the message holds no path nor secret. */
function refused(env: Record<string, string>): { variable: string; message: string }[] {
  return problemsHiding(
    () => loadCursorConfig({ ...kafka, KAFKA_SSL: 'true', ...env }),
    [f.dir, oauth.KAFKA_SASL_OAUTH_CLIENT_SECRET],
  );
}

describe('Kafka TLS and SASL configuration, checked at start', () => {
  it('takes a CA, a client certificate and its key, and turns TLS on with them', () => {
    const config = loadCursorConfig({
      ...kafka,
      KAFKA_TLS_CA: f.cert,
      KAFKA_TLS_CERT: f.cert,
      KAFKA_TLS_KEY: f.key,
    });
    expect(config.kafka.ssl).toBe(true);
    expect(config.kafka.tls).toEqual({ caFile: f.cert, certFile: f.cert, keyFile: f.key });
    // What kafkajs gets: the files' bytes, and nothing that turns verification off.
    const options = tlsOptionsOf(config.kafka);
    expect(options).toEqual({ ca: expect.any(Buffer), cert: expect.any(Buffer), key: expect.any(Buffer) });
    expect(options).not.toHaveProperty('rejectUnauthorized');
    expect(options).not.toHaveProperty('checkServerIdentity');
  });

  it('leaves TLS off without KAFKA_SSL or a TLS file, and on with KAFKA_SSL alone (the system CAs)', () => {
    expect(loadCursorConfig(kafka).kafka).toMatchObject({ ssl: false });
    expect(loadCursorConfig(kafka).kafka.tls).toBeUndefined();
    const system = loadCursorConfig({ ...kafka, KAFKA_SSL: 'true' }).kafka;
    expect(tlsOptionsOf(system)).toBe(true);
    expect(tlsOptionsOf(loadCursorConfig(kafka).kafka)).toBe(false);
  });

  it('names each unusable TLS file by its variable', () => {
    expect(refused({ KAFKA_TLS_CA: join(f.dir, 'missing.pem') })).toEqual([
      { variable: 'KAFKA_TLS_CA', message: 'cannot read the file it names' },
    ]);
    expect(refused({ KAFKA_TLS_CA: f.key })).toEqual([
      { variable: 'KAFKA_TLS_CA', message: 'is not a PEM certificate bundle' },
    ]);
    expect(refused({ KAFKA_TLS_CERT: f.cert, KAFKA_TLS_KEY: f.otherKey })).toEqual([
      { variable: 'KAFKA_TLS_KEY', message: "is not the private key of KAFKA_TLS_CERT's certificate" },
    ]);
    expect(refused({ KAFKA_TLS_CERT: f.cert, KAFKA_TLS_KEY: f.encryptedKey })).toEqual([
      { variable: 'KAFKA_TLS_KEY', message: 'is not an unencrypted PEM private key' },
    ]);
  });

  it('takes KAFKA_TLS_CERT and KAFKA_TLS_KEY together only, and refuses KAFKA_SSL=false beside a TLS file', () => {
    expect(refused({ KAFKA_TLS_CERT: f.cert })).toEqual([
      { variable: 'KAFKA_TLS_KEY', message: 'KAFKA_TLS_CERT and KAFKA_TLS_KEY go together' },
    ]);
    expect(refused({ KAFKA_TLS_KEY: f.key })).toEqual([
      { variable: 'KAFKA_TLS_CERT', message: 'KAFKA_TLS_CERT and KAFKA_TLS_KEY go together' },
    ]);
    expect(refused({ KAFKA_SSL: 'false', KAFKA_TLS_CA: f.cert })).toEqual([
      { variable: 'KAFKA_SSL', message: 'must not be false when KAFKA_TLS_CA is set' },
    ]);
  });

  it('takes OAUTHBEARER client credentials, the scope optional', () => {
    expect(loadCursorConfig({ ...kafka, KAFKA_SSL: 'true', ...oauth }).kafka.sasl).toEqual({
      mechanism: 'oauthbearer',
      tokenUrl: oauth.KAFKA_SASL_OAUTH_TOKEN_URL,
      clientId: 'fraudlink',
      clientSecret: oauth.KAFKA_SASL_OAUTH_CLIENT_SECRET,
    });
    const scoped = loadCursorConfig({
      ...kafka,
      KAFKA_SSL: 'true',
      ...oauth,
      KAFKA_SASL_OAUTH_SCOPE: 'kafka',
    });
    expect(scoped.kafka.sasl).toMatchObject({ mechanism: 'oauthbearer', scope: 'kafka' });
  });

  it('names what OAUTHBEARER lacks, and the password variables it does not take', () => {
    expect(refused({ KAFKA_SASL_MECHANISM: 'oauthbearer' }).map((p) => p.variable)).toEqual([
      'KAFKA_SASL_OAUTH_TOKEN_URL',
      'KAFKA_SASL_OAUTH_CLIENT_ID',
      'KAFKA_SASL_OAUTH_CLIENT_SECRET',
    ]);
    expect(refused({ ...oauth, KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: 'pw' })).toEqual([
      {
        variable: 'KAFKA_SASL_USERNAME',
        message:
          'is not used with KAFKA_SASL_MECHANISM=oauthbearer, whose client authenticates with KAFKA_SASL_OAUTH_CLIENT_ID and KAFKA_SASL_OAUTH_CLIENT_SECRET',
      },
      {
        variable: 'KAFKA_SASL_PASSWORD',
        message:
          'is not used with KAFKA_SASL_MECHANISM=oauthbearer, whose client authenticates with KAFKA_SASL_OAUTH_CLIENT_ID and KAFKA_SASL_OAUTH_CLIENT_SECRET',
      },
    ]);
    expect(refused({ ...oauth, KAFKA_SASL_OAUTH_TOKEN_URL: 'ftp://login.psp.example/token' })).toEqual([
      { variable: 'KAFKA_SASL_OAUTH_TOKEN_URL', message: 'must be an http(s) URL' },
    ]);
  });

  it('refuses OAuth variables beside a password mechanism, and any SASL variable without a mechanism', () => {
    expect(
      refused({
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: 'svc',
        KAFKA_SASL_PASSWORD: 'pw',
        KAFKA_SASL_OAUTH_SCOPE: 'kafka',
      }),
    ).toEqual([
      { variable: 'KAFKA_SASL_OAUTH_SCOPE', message: 'is used only with KAFKA_SASL_MECHANISM=oauthbearer' },
    ]);
    expect(refused({ KAFKA_SASL_OAUTH_CLIENT_ID: 'fraudlink' })).toEqual([
      { variable: 'KAFKA_SASL_MECHANISM', message: 'is required when KAFKA_SASL_OAUTH_CLIENT_ID is set' },
    ]);
    expect(refused({ KAFKA_SASL_MECHANISM: 'gssapi' })).toEqual([
      {
        variable: 'KAFKA_SASL_MECHANISM',
        message: 'must be plain, scram-sha-256, scram-sha-512 or oauthbearer',
      },
    ]);
  });

  it('gives every Kafka command the same settings: connector, verifier, replay, cursor commands', () => {
    const env = {
      ...kafka,
      ...oauth,
      KAFKA_TLS_CA: f.cert,
      KAFKA_TLS_CERT: f.cert,
      KAFKA_TLS_KEY: f.key,
      API_BASE_URL: 'https://psp.example/api',
      API_KEY: 'key',
      SCHEMA_REGISTRY_URL: 'https://registry.psp.example',
    };
    const expected = loadCursorConfig(env).kafka;
    expect(loadConnectorConfig(env).kafka).toEqual(expected);
    expect(loadVerifierConfig(env).kafka).toEqual(expected);
    expect(loadReplayConfig(env).kafka).toEqual(expected);
  });
});
