import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  loadApiConfig,
  loadConnectorConfig,
  loadReplayConfig,
  loadVerifierConfig,
} from '../../src/config/index.ts';
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
    const env = { API_BASE_URL: 'http://psp.example/api', API_TLS_CERT: f.cert, API_TLS_KEY: f.key };
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
