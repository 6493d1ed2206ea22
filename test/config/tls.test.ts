import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  loadApiConfig,
  loadConnectorConfig,
  loadReplayConfig,
  loadVerifierConfig,
} from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors.ts';
import { problemsHiding, useTlsFiles } from './tls-files.ts';

const api = { API_BASE_URL: 'https://psp.example/api', API_KEY: 'super-secret-key-123' };
const f = useTlsFiles();

/** The problems of loading `env`, and the whole message, which must not hold a path or a key. */
function refused(env: Record<string, string>): { variable: string; message: string }[] {
  return problemsHiding(() => loadApiConfig({ ...api, ...env }), [f.dir, env.API_KEY ?? api.API_KEY]);
}

describe('mutual-TLS configuration, checked at start', () => {
  it('takes a certificate, its key and a CA bundle that exist and parse', () => {
    const env = { ...api, API_TLS_CERT: f.cert, API_TLS_KEY: f.key, API_TLS_CA: f.cert };
    expect(loadApiConfig(env).api.tls).toEqual({ certFile: f.cert, keyFile: f.key, caFile: f.cert });
    expect(loadApiConfig({ ...api, API_TLS_CA: f.cert }).api.tls).toEqual({ caFile: f.cert });
  });

  it('refuses files that do not exist, naming each variable but not the path (they were read at first call)', () => {
    const missing = (name: string) => join(f.dir, name);
    expect(
      refused({ API_TLS_CERT: missing('a.crt'), API_TLS_KEY: missing('a.key'), API_TLS_CA: missing('ca') }),
    ).toEqual(
      ['API_TLS_CERT', 'API_TLS_KEY', 'API_TLS_CA'].map((variable) => ({
        variable,
        message: 'cannot read the file it names',
      })),
    );
  });

  const encrypted = 'API_TLS_KEY: is not an unencrypted PEM private key';
  it.each([
    ['a key as the certificate', 'key', 'key', 'API_TLS_CERT: is not a PEM certificate'],
    ['a certificate as the key', 'cert', 'cert', encrypted],
    ['a key behind a passphrase', 'cert', 'encryptedKey', encrypted],
    [
      "another certificate's key",
      'cert',
      'otherKey',
      "API_TLS_KEY: is not the private key of API_TLS_CERT's certificate",
    ],
  ] as const)('refuses %s, naming the variable', (_what, cert, key, problem) => {
    const [variable, message] = problem.split(': ');
    expect(refused({ API_TLS_CERT: f[cert], API_TLS_KEY: f[key] })).toEqual([{ variable, message }]);
  });

  it('refuses a CA bundle that holds no certificate, which OpenSSL would ignore', () => {
    expect(refused({ API_TLS_CA: f.key })).toEqual([
      { variable: 'API_TLS_CA', message: 'is not a PEM certificate bundle' },
    ]);
  });

  it('refuses TLS files with an http:// API_BASE_URL, where they would never be used', () => {
    // On loopback, which the clear-text rule lets through: only the files' own rule speaks.
    const env = { API_BASE_URL: 'http://127.0.0.1:8443/api', API_TLS_CERT: f.cert, API_TLS_KEY: f.key };
    expect(refused(env)).toEqual([
      { variable: 'API_BASE_URL', message: 'must be an https:// URL when API_TLS_CERT, API_TLS_KEY is set' },
    ]);
  });

  it('checks the files for the connector and the verifier too, and not for commands without the API', () => {
    const env = {
      ...api,
      KAFKA_BROKERS: 'k:9092',
      SCHEMA_REGISTRY_URL: 'http://registry:8081',
      API_TLS_CA: join(f.dir, 'missing'),
    };
    for (const load of [loadConnectorConfig, loadVerifierConfig]) {
      expect(() => load(env)).toThrow('API_TLS_CA: cannot read the file it names (ENOENT)');
    }
    expect(loadReplayConfig(env).alertsTopic).toBe('fraud.alerts.v1');
  });
});

describe('API key, checked at start', () => {
  it.each([
    ['a space inside', 'key with-space'],
    ['a line break inside', 'first\nsecond'],
    ['a character outside ASCII', 'clé-secrète'],
    ['a control character', 'key\u0000x'],
  ])('refuses a key with %s, which cannot be sent as a header, without showing it', (_what, key) => {
    expect(refused({ API_KEY: key })).toEqual([
      { variable: 'API_KEY', message: 'must be printable ASCII without spaces' },
    ]);
  });

  it('takes a key read from a file with its final line break, as Kubernetes Secrets often hold it', () => {
    expect(loadApiConfig({ ...api, API_KEY: 'k-3f9a_Z.~+/=\n' }).api.key).toBe('k-3f9a_Z.~+/=');
  });
});

describe('schema registry TLS configuration, checked at start', () => {
  const registry = { KAFKA_BROKERS: 'k:9092', SCHEMA_REGISTRY_URL: 'https://registry:8081/apis/ccompat/v7' };

  it('takes a CA, and a client certificate with its key, for the registry of every command that reads it', () => {
    const env = {
      ...api,
      ...registry,
      SCHEMA_REGISTRY_TLS_CA: f.cert,
      SCHEMA_REGISTRY_TLS_CERT: f.cert,
      SCHEMA_REGISTRY_TLS_KEY: f.key,
    };
    const tls = { caFile: f.cert, certFile: f.cert, keyFile: f.key };
    for (const load of [loadConnectorConfig, loadVerifierConfig, loadReplayConfig])
      expect(load(env).registry.tls).toEqual(tls);
  });

  it('refuses a missing file, a key without its certificate, a key that is not the certificate’s, and an http:// registry, by name', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadReplayConfig({ ...registry, ...env });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as Error).message).not.toContain(f.dir);
        return (err as ConfigError).problems.map(
          (p) => `${p.variable}: ${p.message.replace(/ \(.*\)$/, '')}`,
        );
      }
      throw new Error('expected a ConfigError');
    };
    expect(problems({ SCHEMA_REGISTRY_TLS_CA: join(f.dir, 'missing') })).toEqual([
      'SCHEMA_REGISTRY_TLS_CA: cannot read the file it names',
    ]);
    expect(problems({ SCHEMA_REGISTRY_TLS_KEY: f.key })).toEqual([
      'SCHEMA_REGISTRY_TLS_CERT: SCHEMA_REGISTRY_TLS_CERT and SCHEMA_REGISTRY_TLS_KEY go together',
    ]);
    expect(problems({ SCHEMA_REGISTRY_TLS_CERT: f.cert, SCHEMA_REGISTRY_TLS_KEY: f.otherKey })).toEqual([
      "SCHEMA_REGISTRY_TLS_KEY: is not the private key of SCHEMA_REGISTRY_TLS_CERT's certificate",
    ]);
    expect(problems({ SCHEMA_REGISTRY_URL: 'http://registry:8081', SCHEMA_REGISTRY_TLS_CA: f.cert })).toEqual(
      ['SCHEMA_REGISTRY_URL: must be an https:// URL when SCHEMA_REGISTRY_TLS_CA is set'],
    );
  });
});
