import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../src/config/clear-text.ts';
import {
  loadApiConfig,
  loadConnectorConfig,
  loadCursorConfig,
  loadReplayConfig,
  loadSandboxConfig,
  loadVerifierConfig,
} from '../../src/config/index.ts';
import { runCli } from '../helpers/cli.ts';
import { problemsOf as problemsOfLoad } from './problems.ts';
import { useTlsFiles } from './tls-files.ts';

const minimal = {
  API_BASE_URL: 'https://psp.example/api',
  API_KEY: 'super-secret-key-123',
  KAFKA_BROKERS: 'k1:9092',
  SCHEMA_REGISTRY_URL: 'https://registry:8081/apis/ccompat/v7',
};
const sasl = {
  KAFKA_SASL_MECHANISM: 'scram-sha-512',
  KAFKA_SASL_USERNAME: 'fraudlink',
  KAFKA_SASL_PASSWORD: 'kafka-secret-pw',
};
const registryAuth = {
  SCHEMA_REGISTRY_USERNAME: 'fraudlink',
  SCHEMA_REGISTRY_PASSWORD: 'registry-secret-pw',
};

/** The problems of loading, and that its message holds none of the secrets above. */
function problemsOf(fn: () => unknown): { variable: string; message: string }[] {
  const problems = problemsOfLoad(fn);
  for (const secret of ['kafka-secret-pw', 'registry-secret-pw', 'super-secret-key-123'])
    expect(JSON.stringify(problems)).not.toContain(secret);
  return problems;
}

const tlsFiles = useTlsFiles();

const allow =
  ' (payment data and credentials must not travel in clear; ALLOW_INSECURE_TRANSPORT=true allows it for trials)';

describe('clear text, refused by default', () => {
  it('refuses an http:// API_BASE_URL beyond loopback, in every command that reads it', () => {
    const env = { ...minimal, API_BASE_URL: 'http://psp.example/api' };
    const problem = {
      variable: 'API_BASE_URL',
      message: `must be an https:// URL unless its host is loopback (127.0.0.0/8, ::1, localhost)${allow}`,
    };
    for (const load of [loadConnectorConfig, loadVerifierConfig, loadApiConfig])
      expect(problemsOf(() => load(env))).toEqual([problem]);
    // Replay does not call the upstream.
    expect(loadReplayConfig(env).inClear).toBeUndefined();
  });

  it('takes an http:// API_BASE_URL on loopback, where nothing leaves the machine', () => {
    for (const url of [
      'http://127.0.0.1:8080',
      'http://127.3.2.1/api',
      'http://[::1]:80',
      'http://localhost:9',
    ])
      expect(loadApiConfig({ ...minimal, API_BASE_URL: url }).inClear).toBeUndefined();
    expect(isLoopbackHost('128.0.0.1')).toBe(false);
    expect(isLoopbackHost('localhost.example')).toBe(false);
  });

  it('refuses SASL without KAFKA_SSL=true, in every command that reads Kafka', () => {
    const problem = {
      variable: 'KAFKA_SSL',
      message: `must be true when KAFKA_SASL_MECHANISM is set${allow}`,
    };
    for (const load of [loadConnectorConfig, loadVerifierConfig, loadReplayConfig, loadCursorConfig]) {
      expect(problemsOf(() => load({ ...minimal, ...sasl }))).toEqual([problem]);
      expect(problemsOf(() => load({ ...minimal, ...sasl, KAFKA_SSL: 'false' }))).toEqual([problem]);
      expect(load({ ...minimal, ...sasl, KAFKA_SSL: 'true' }).inClear).toBeUndefined();
    }
  });

  it('takes SASL beside a KAFKA_TLS_* file with KAFKA_SSL unset: the file turns TLS on', () => {
    const env = { ...minimal, ...sasl, KAFKA_TLS_CA: tlsFiles.cert };
    for (const load of [loadConnectorConfig, loadVerifierConfig, loadReplayConfig, loadCursorConfig])
      expect(load(env).inClear).toBeUndefined();
  });

  it('refuses an http:// OAuth token endpoint beyond loopback: the client secret would travel in clear', () => {
    const oauth = {
      ...minimal,
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTH_CLIENT_ID: 'fraudlink',
      KAFKA_SASL_OAUTH_CLIENT_SECRET: 'kafka-secret-pw',
    };
    const env = { ...oauth, KAFKA_SASL_OAUTH_TOKEN_URL: 'http://login.psp.example/token' };
    expect(problemsOf(() => loadCursorConfig(env))).toEqual([
      {
        variable: 'KAFKA_SASL_OAUTH_TOKEN_URL',
        message: `must be an https:// URL unless its host is loopback (127.0.0.0/8, ::1, localhost)${allow}`,
      },
    ]);
    expect(loadCursorConfig({ ...env, ALLOW_INSECURE_TRANSPORT: 'true' }).inClear).toEqual([
      'the OAuth client secret and tokens to and from KAFKA_SASL_OAUTH_TOKEN_URL',
    ]);
    const local = { ...oauth, KAFKA_SASL_OAUTH_TOKEN_URL: 'http://127.0.0.1:8443/token' };
    expect(loadCursorConfig(local).inClear).toBeUndefined();
  });

  it('refuses registry credentials over http://, in every command that reads the registry', () => {
    const env = { ...minimal, ...registryAuth, SCHEMA_REGISTRY_URL: 'http://registry:8081' };
    const problem = {
      variable: 'SCHEMA_REGISTRY_URL',
      message: `must be an https:// URL when SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD are set${allow}`,
    };
    for (const load of [loadConnectorConfig, loadVerifierConfig, loadReplayConfig])
      expect(problemsOf(() => load(env))).toEqual([problem]);
    // Credentials in the URL itself travel in clear just the same.
    expect(
      problemsOf(() =>
        loadReplayConfig({ ...minimal, SCHEMA_REGISTRY_URL: 'http://user:registry-secret-pw@registry:8081' }),
      ),
    ).toEqual([problem]);
    // Without credentials, an http:// registry carries schemas only.
    expect(
      loadReplayConfig({ ...minimal, SCHEMA_REGISTRY_URL: 'http://registry:8081' }).inClear,
    ).toBeUndefined();
  });

  it('takes all three with ALLOW_INSECURE_TRANSPORT=true, saying what travels in clear', () => {
    const env = {
      ...minimal,
      ...sasl,
      ...registryAuth,
      API_BASE_URL: 'http://psp.example/api',
      SCHEMA_REGISTRY_URL: 'http://registry:8081',
      ALLOW_INSECURE_TRANSPORT: 'true',
    };
    expect(loadConnectorConfig(env).inClear).toEqual([
      'the API key, IBANs and names to and from API_BASE_URL',
      'the Kafka SASL credentials (KAFKA_SSL is not true)',
      'the schema registry credentials (SCHEMA_REGISTRY_URL is http://)',
    ]);
    expect(loadApiConfig(env).inClear).toEqual(['the API key, IBANs and names to and from API_BASE_URL']);
    expect(loadCursorConfig(env).inClear).toEqual(['the Kafka SASL credentials (KAFKA_SSL is not true)']);
    expect(loadSandboxConfig(env)).toEqual({ logLevel: 'info' });
  });

  it('refuses an ALLOW_INSECURE_TRANSPORT that is not a flag, naming it', () => {
    expect(
      problemsOf(() => loadApiConfig({ ...minimal, ALLOW_INSECURE_TRANSPORT: 'please' })).map(
        (p) => p.variable,
      ),
    ).toEqual(['ALLOW_INSECURE_TRANSPORT']);
  });
});

/** `fraudlink <args>` run to its end with only `env`; its exit code and stderr's JSON lines. */
function fraudlink(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; lines: Record<string, unknown>[]; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['src/cli/main.ts', ...args],
      { env: { PATH: process.env.PATH ?? '', ...env } },
      (error, _out, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        const lines = stderr
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        resolve({ code, lines, stderr });
      },
    );
  });
}

describe('clear text in a command', () => {
  // 192.0.2.1 (TEST-NET-1) is routed nowhere: the call fails after its 100 ms time limit.
  const upstream = { API_BASE_URL: 'http://192.0.2.1/api', API_KEY: 'k', API_TIMEOUT_MS: '100' };

  it('exits 2 naming API_BASE_URL without the opt-in, sending nothing', async () => {
    const run = await fraudlink(['api', 'export', '--retries', '0'], upstream);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('API_BASE_URL: must be an https:// URL unless its host is loopback');
  });

  it('warns at start with the opt-in, naming what travels in clear', async () => {
    const run = await fraudlink(['api', 'export', '--retries', '0'], {
      ...upstream,
      ALLOW_INSECURE_TRANSPORT: 'true',
    });
    expect(run.code).toBe(6);
    expect(run.lines[0]).toMatchObject({
      level: 'warn',
      inClear: ['the API key, IBANs and names to and from API_BASE_URL'],
      msg: 'ALLOW_INSECURE_TRANSPORT=true: travelling in clear: the API key, IBANs and names to and from API_BASE_URL',
    });
  });

  it('warns of SASL and registry credentials in clear in replay, before it connects', async () => {
    const replay = runCli(['replay', '--summary'], {
      KAFKA_BROKERS: '127.0.0.1:1',
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1',
      ...sasl,
      ...registryAuth,
      ALLOW_INSECURE_TRANSPORT: 'true',
    });
    const warning = await replay.logLine((l) => l.level === 'warn');
    expect(warning.inClear).toEqual([
      'the Kafka SASL credentials (KAFKA_SSL is not true)',
      'the schema registry credentials (SCHEMA_REGISTRY_URL is http://)',
    ]);
    expect(replay.stderr().split('\n')[0]).toContain('ALLOW_INSECURE_TRANSPORT=true: travelling in clear');
    expect(replay.stderr()).not.toContain('kafka-secret-pw');
  });
});
