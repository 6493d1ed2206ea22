import { rm } from 'node:fs/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  loadApiConfig,
  loadConnectorConfig,
  loadCursorConfig,
  loadReplayConfig,
  loadSandboxConfig,
  loadTableConfig,
  loadVerifierConfig,
} from '../../src/config/index.ts';
import { problemsOf } from './problems.ts';
import { writeTlsFiles } from './tls-files.ts';

const minimal = {
  API_BASE_URL: 'https://psp.example/api/',
  API_KEY: 'super-secret-key-123',
  KAFKA_BROKERS: 'k1:9092, k2:9092',
  SCHEMA_REGISTRY_URL: 'http://registry:8081/apis/ccompat/v7',
};

describe('configuration', () => {
  it('applies the documented defaults and normalises values', () => {
    const config = loadConnectorConfig(minimal);
    expect(config.api.baseUrl).toBe('https://psp.example/api');
    expect(config.kafka.brokers).toEqual(['k1:9092', 'k2:9092']);
    expect(config.topics).toMatchObject({
      alertsTopic: 'fraud.alerts.v1',
      alertsDlqTopic: 'fraud.alerts.dlq.v1',
      offsetsTopic: 'fraudlink.connector.offsets',
    });
    expect(config.connector).toMatchObject({
      name: 'fraudlink-alerts',
      exportStart: 'earliest',
      cursorParam: 'cursor',
      pollIntervalMs: 5000,
    });
    expect(config.http.port).toBe(9464);
    expect(config.logLevel).toBe('info');
  });

  it('is frozen so nothing can change it after start', () => {
    const config = loadConnectorConfig(minimal);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.connector)).toBe(true);
    expect(() => {
      (config.connector as { name: string }).name = 'other';
    }).toThrow(TypeError);
  });

  it('reports every missing or bad variable together, by name', () => {
    const problems = problemsOf(() =>
      loadConnectorConfig({
        API_BASE_URL: 'ftp://nope',
        KAFKA_BROKERS: 'no-port',
        POLL_INTERVAL_MS: 'soon',
        EXPORT_START: 'yesterday',
        LOG_LEVEL: 'loud',
      }),
    );
    expect(problems.map((p) => p.variable).sort()).toEqual(
      [
        'API_BASE_URL',
        'API_KEY',
        'EXPORT_START',
        'KAFKA_BROKERS',
        'LOG_LEVEL',
        'POLL_INTERVAL_MS',
        'SCHEMA_REGISTRY_URL',
      ].sort(),
    );
    expect(problems.find((p) => p.variable === 'API_KEY')?.message).toBe('is required');
  });

  it('refuses an API_BASE_URL with a query, a fragment or credentials, which requests would drop', () => {
    for (const url of [
      'https://psp.example/api?tenant=acme',
      'https://psp.example/api#v1',
      'https://user:secret-in-url@psp.example/api',
    ]) {
      expect(
        problemsOf(() => loadConnectorConfig({ ...minimal, API_BASE_URL: url })),
        url,
      ).toEqual([
        {
          variable: 'API_BASE_URL',
          message:
            'must be a base URL without a query, fragment or user:password (requests would drop them; the API key goes in API_KEY)',
        },
      ]);
    }
    expect(loadApiConfig({ ...minimal, API_BASE_URL: 'https://psp.example:8443/api/' }).api.baseUrl).toBe(
      'https://psp.example:8443/api',
    );
  });

  it('refuses EXPORT_CURSOR_PARAM=updatedAfter, which would overwrite the updatedAfter of the request', () => {
    expect(
      problemsOf(() => loadConnectorConfig({ ...minimal, EXPORT_CURSOR_PARAM: 'updatedAfter' })),
    ).toEqual([
      { variable: 'EXPORT_CURSOR_PARAM', message: "must not be updatedAfter, the export's other parameter" },
    ]);
    expect(problemsOf(() => loadApiConfig({ ...minimal, EXPORT_CURSOR_PARAM: 'updatedAfter' }))).toHaveLength(
      1,
    );
  });

  it('never puts a secret value in the error', () => {
    const env = {
      ...minimal,
      API_BASE_URL: 'not a url',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_PASSWORD: 'sasl-password-xyz',
      SCHEMA_REGISTRY_PASSWORD: 'registry-password-xyz',
    };
    let message = '';
    try {
      loadConnectorConfig(env);
    } catch (err) {
      message = `${(err as Error).message} ${JSON.stringify(err)}`;
    }
    expect(message).toContain('API_BASE_URL');
    expect(message).toContain('KAFKA_SASL_USERNAME');
    expect(message).toContain('SCHEMA_REGISTRY_USERNAME');
    for (const secret of ['super-secret-key-123', 'sasl-password-xyz', 'registry-password-xyz']) {
      expect(message).not.toContain(secret);
    }
  });

  it('reads broker security and mutual TLS settings', async () => {
    const tls = await writeTlsFiles();
    onTestFinished(() => rm(tls.dir, { recursive: true, force: true }));
    const config = loadVerifierConfig({
      ...minimal,
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD: 'pw',
      API_TLS_CERT: tls.cert,
      API_TLS_KEY: tls.key,
    });
    expect(config.kafka.ssl).toBe(true);
    expect(config.kafka.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'svc', password: 'pw' });
    expect(config.api.tls).toEqual({ certFile: tls.cert, keyFile: tls.key });
    expect(config.verifier.replyTopicsAllowed.test('vop.verification.replies.team-a')).toBe(true);
    expect(config.verifier.replyTopicsAllowed.test('payments.replies')).toBe(false);
  });

  it('matches VERIFY_REPLY_TOPICS against whole names only, and lists the connector topics no reply may go to', () => {
    const config = loadVerifierConfig({
      ...minimal,
      VERIFY_REPLY_TOPICS: 'vop\\.verification\\.replies\\.',
      ALERTS_TOPIC: 'team.alerts',
    });
    const allowed = config.verifier.replyTopicsAllowed;
    expect(allowed.test('vop.verification.replies.')).toBe(true);
    expect(allowed.test('x.vop.verification.replies.y')).toBe(false);
    expect(allowed.test('vop.verification.replies.team-a')).toBe(false);
    expect(
      loadVerifierConfig({ ...minimal, VERIFY_REPLY_TOPICS: 'a|b' }).verifier.replyTopicsAllowed.test('ab'),
    ).toBe(false);
    expect(config.verifier.ownTopics).toEqual([
      'vop.verification.requests.v1',
      'vop.verification.requests.dlq.v1',
      'team.alerts',
      'fraud.alerts.dlq.v1',
      'fraudlink.connector.offsets',
    ]);
  });

  it("takes one of Kafka's codecs for KAFKA_COMPRESSION, none by default, and refuses any other", () => {
    expect(loadVerifierConfig(minimal).kafka.compression).toBe('none');
    expect(loadReplayConfig({ ...minimal, KAFKA_COMPRESSION: 'zstd' }).kafka.compression).toBe('zstd');
    expect(problemsOf(() => loadVerifierConfig({ ...minimal, KAFKA_COMPRESSION: 'brotli' }))).toEqual([
      { variable: 'KAFKA_COMPRESSION', message: 'must be none, gzip, snappy, lz4 or zstd' },
    ]);
  });

  it('brings request deadlines in to 15 s by default, or to the default deadline when that is longer', () => {
    const maxOf = (env: Record<string, string>) =>
      loadVerifierConfig({ ...minimal, ...env }).verifier.maxDeadlineMs;
    expect(maxOf({})).toBe(15_000);
    expect(maxOf({ VERIFY_DEFAULT_DEADLINE_MS: '60000' })).toBe(60_000);
    expect(maxOf({ VERIFY_MAX_DEADLINE_MS: '5000' })).toBe(5000);
    expect(problemsOf(() => loadVerifierConfig({ ...minimal, VERIFY_MAX_DEADLINE_MS: '4999' }))).toEqual([
      { variable: 'VERIFY_MAX_DEADLINE_MS', message: 'must be at least VERIFY_DEFAULT_DEADLINE_MS (5000)' },
    ]);
    expect(
      problemsOf(() =>
        loadVerifierConfig({
          ...minimal,
          VERIFY_DEFAULT_DEADLINE_MS: '30000',
          VERIFY_MAX_DEADLINE_MS: '20000',
        }),
      ),
    ).toEqual([
      { variable: 'VERIFY_MAX_DEADLINE_MS', message: 'must be at least VERIFY_DEFAULT_DEADLINE_MS (30000)' },
    ]);
    // The connector does not read it: no rule of the verifier's is reported there.
    expect(() => loadConnectorConfig({ ...minimal, VERIFY_MAX_DEADLINE_MS: '1' })).not.toThrow();
  });

  it('refuses a reply allow-list that is not a regular expression', () => {
    expect(problemsOf(() => loadVerifierConfig({ ...minimal, VERIFY_REPLY_TOPICS: '([' }))).toEqual([
      { variable: 'VERIFY_REPLY_TOPICS', message: 'must be a valid regular expression' },
    ]);
  });

  it("refuses one topic name for the verifier's requests, replies and DLQ, naming the clashing variables", () => {
    const problems = problemsOf(() =>
      loadVerifierConfig({
        ...minimal,
        VERIFY_REQUESTS_TOPIC: 't',
        VERIFY_REPLIES_TOPIC: 't',
        VERIFY_DLQ_TOPIC: 't',
      }),
    );
    expect(problems).toEqual([
      { variable: 'VERIFY_REPLIES_TOPIC', message: 'must name a different topic from VERIFY_REQUESTS_TOPIC' },
      { variable: 'VERIFY_DLQ_TOPIC', message: 'must name a different topic from VERIFY_REQUESTS_TOPIC' },
    ]);
  });

  it("refuses one topic name for the connector's alerts, DLQ and cursor, naming the clashing variables", () => {
    const problems = problemsOf(() =>
      loadConnectorConfig({
        ...minimal,
        ALERTS_TOPIC: 't',
        ALERTS_DLQ_TOPIC: 't',
        CONNECTOR_OFFSETS_TOPIC: 't',
        ALERTS_TOPIC_PARTITIONS: '1',
      }),
    );
    expect(problems).toEqual([
      { variable: 'ALERTS_DLQ_TOPIC', message: 'must name a different topic from ALERTS_TOPIC' },
      { variable: 'CONNECTOR_OFFSETS_TOPIC', message: 'must name a different topic from ALERTS_TOPIC' },
    ]);
  });

  it("refuses a topic variable set to another role's default name", () => {
    expect(
      problemsOf(() => loadVerifierConfig({ ...minimal, VERIFY_DLQ_TOPIC: ' vop.verification.replies.v1 ' })),
    ).toEqual([
      { variable: 'VERIFY_DLQ_TOPIC', message: 'must name a different topic from VERIFY_REPLIES_TOPIC' },
    ]);
    expect(
      problemsOf(() => loadConnectorConfig({ ...minimal, CONNECTOR_OFFSETS_TOPIC: 'fraud.alerts.v1' })),
    ).toEqual([
      { variable: 'CONNECTOR_OFFSETS_TOPIC', message: 'must name a different topic from ALERTS_TOPIC' },
    ]);
  });

  it('refuses topic names that differ only by "." against "_", which Kafka will not create side by side', () => {
    expect(
      problemsOf(() =>
        loadConnectorConfig({ ...minimal, ALERTS_TOPIC: 'fraud_alerts', ALERTS_DLQ_TOPIC: 'fraud.alerts' }),
      ),
    ).toEqual([
      {
        variable: 'ALERTS_DLQ_TOPIC',
        message:
          'must name a different topic from ALERTS_TOPIC (Kafka treats "." and "_" in topic names as the same)',
      },
    ]);
  });

  it('reports clashing topics together with the other problems, and leaves an invalid topic to its own message', () => {
    const problems = problemsOf(() =>
      loadVerifierConfig({
        ...minimal,
        API_KEY: '',
        KAFKA_SASL_USERNAME: 'svc',
        VERIFY_REQUESTS_TOPIC: 'same',
        VERIFY_REPLIES_TOPIC: 'same',
        VERIFY_DLQ_TOPIC: 'not a topic',
      }),
    );
    expect(problems.map((p) => p.variable).sort()).toEqual(
      [
        'API_KEY',
        // Which credentials are needed depends on the mechanism: the missing mechanism alone is named.
        'KAFKA_SASL_MECHANISM',
        'VERIFY_DLQ_TOPIC',
        'VERIFY_REPLIES_TOPIC',
      ].sort(),
    );
    expect(problems.find((p) => p.variable === 'VERIFY_DLQ_TOPIC')?.message).toBe(
      'must be a valid Kafka topic name',
    );
  });

  it('lets replay and the other commands use their own topic names freely', () => {
    const env = { ...minimal, ALERTS_TOPIC: 'shared', VERIFY_REQUESTS_TOPIC: 'shared' };
    expect(loadReplayConfig(env).alertsTopic).toBe('shared');
    expect(loadConnectorConfig(env).topics.alertsTopic).toBe('shared');
    expect(loadVerifierConfig(env).verifier.requestsTopic).toBe('shared');
  });

  it.each([
    ['port 0', 'k1:0'],
    ['a port past 65535', 'k1:9092,k2:99999'],
    ['port 65536', 'k1:65536'],
  ])('refuses in KAFKA_BROKERS %s, naming the variable', (_what, value) => {
    expect(problemsOf(() => loadReplayConfig({ ...minimal, KAFKA_BROKERS: value }))).toEqual([
      {
        variable: 'KAFKA_BROKERS',
        message: 'must be a comma-separated list of host:port, each port 1 to 65535',
      },
    ]);
  });

  it('takes broker ports 1 and 65535', () => {
    expect(loadReplayConfig({ ...minimal, KAFKA_BROKERS: 'k1:1,k2:65535' }).kafka.brokers).toEqual([
      'k1:1',
      'k2:65535',
    ]);
  });

  it('refuses replication factor 0, which every broker refuses, and takes -1 and 1 to 32', () => {
    for (const load of [loadConnectorConfig, loadVerifierConfig]) {
      expect(problemsOf(() => load({ ...minimal, TOPIC_REPLICATION_FACTOR: '0' }))).toEqual([
        { variable: 'TOPIC_REPLICATION_FACTOR', message: 'must be -1 (the broker default) or 1 to 32' },
      ]);
    }
    for (const [value, expected] of [
      ['-1', -1],
      ['1', 1],
      ['32', 32],
    ] as const) {
      expect(
        loadConnectorConfig({ ...minimal, TOPIC_REPLICATION_FACTOR: value }).topics.replicationFactor,
      ).toBe(expected);
    }
  });

  it.each(['.', '..'])('refuses the topic name "%s", which Kafka does not allow', (name) => {
    expect(problemsOf(() => loadReplayConfig({ ...minimal, ALERTS_TOPIC: name }))).toEqual([
      { variable: 'ALERTS_TOPIC', message: 'must be a valid Kafka topic name, not "." or ".."' },
    ]);
    expect(problemsOf(() => loadVerifierConfig({ ...minimal, VERIFY_DLQ_TOPIC: name }))).toEqual([
      { variable: 'VERIFY_DLQ_TOPIC', message: 'must be a valid Kafka topic name, not "." or ".."' },
    ]);
  });

  it("takes topic names of Kafka's legal characters up to 249 long, and refuses 250", () => {
    const longest = `a.-_${'b'.repeat(245)}`;
    expect(loadReplayConfig({ ...minimal, ALERTS_TOPIC: longest }).alertsTopic).toBe(longest);
    expect(loadReplayConfig({ ...minimal, ALERTS_TOPIC: '...' }).alertsTopic).toBe('...');
    expect(problemsOf(() => loadReplayConfig({ ...minimal, ALERTS_TOPIC: `${longest}c` }))).toEqual([
      { variable: 'ALERTS_TOPIC', message: 'must be a valid Kafka topic name' },
    ]);
  });

  it.each([
    ['past 2^53', '99999999999999999999999', 'must be at most 86400000'],
    ['past the largest double', '9'.repeat(400), 'must be at most 86400000'],
    ['below -2^53', '-99999999999999999999999', 'must be at least 0'],
  ])('reports an integer %s once, naming the variable', (_what, value, message) => {
    expect(problemsOf(() => loadConnectorConfig({ ...minimal, POLL_INTERVAL_MS: value }))).toEqual([
      { variable: 'POLL_INTERVAL_MS', message },
    ]);
  });

  it('keeps the integer bounds inclusive', () => {
    expect(loadConnectorConfig({ ...minimal, POLL_INTERVAL_MS: '86400000' }).connector.pollIntervalMs).toBe(
      86_400_000,
    );
    expect(loadConnectorConfig({ ...minimal, POLL_INTERVAL_MS: ' 0 ' }).connector.pollIntervalMs).toBe(0);
    expect(problemsOf(() => loadConnectorConfig({ ...minimal, POLL_INTERVAL_MS: '86400001' }))).toEqual([
      { variable: 'POLL_INTERVAL_MS', message: 'must be at most 86400000' },
    ]);
    expect(problemsOf(() => loadConnectorConfig({ ...minimal, POLL_INTERVAL_MS: '1.5' }))).toEqual([
      { variable: 'POLL_INTERVAL_MS', message: 'must be an integer' },
    ]);
  });

  it('asks replay for Kafka and the registry only, and the api command for the upstream only', () => {
    expect(loadReplayConfig({ KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r' }).alertsTopic).toBe(
      'fraud.alerts.v1',
    );
    expect(loadApiConfig({ API_BASE_URL: 'https://x', API_KEY: 'k' }).api.key).toBe('k');
    expect(problemsOf(() => loadReplayConfig({})).map((p) => p.variable)).toEqual([
      'KAFKA_BROKERS',
      'SCHEMA_REGISTRY_URL',
    ]);
  });

  it('asks the alert table for Kafka and the registry, with a store path and optional API keys', () => {
    const table = loadTableConfig({ KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r' });
    expect(table).toMatchObject({
      alertsTopic: 'fraud.alerts.v1',
      dbPath: './fraudlink-table.db',
      http: { port: 9464, host: '0.0.0.0' },
    });
    expect(table.apiKeys).toBeUndefined();
    const keyed = loadTableConfig({
      KAFKA_BROKERS: 'k:1',
      SCHEMA_REGISTRY_URL: 'http://r',
      TABLE_DB_PATH: '/data/table.db',
      TABLE_API_KEYS: ' engine-key-1 , analyst-key-2 ,',
    });
    expect(keyed.dbPath).toBe('/data/table.db');
    expect(keyed.apiKeys).toEqual(['engine-key-1', 'analyst-key-2']);
    const problems = problemsOf(() =>
      loadTableConfig({ KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r', TABLE_API_KEYS: 'a key' }),
    );
    expect(problems.map((p) => p.variable)).toEqual(['TABLE_API_KEYS']);
    // The keys are secrets: never in the error.
    expect(JSON.stringify(problems)).not.toContain('a key');
  });

  // Both loaded the connector's whole configuration: API_BASE_URL and API_KEY were required, for
  // commands that only read or write the cursor record, a JSON record on Kafka.
  it('asks connector status and reset for Kafka, the cursor topic and name, and LOG_LEVEL, and refuses an offsets topic that is an alerts one', () => {
    expect(loadCursorConfig({ KAFKA_BROKERS: 'k1:9092, k2:9092' })).toEqual({
      logLevel: 'info',
      kafka: { brokers: ['k1:9092', 'k2:9092'], clientId: 'fraudlink', ssl: false, compression: 'none' },
      offsetsTopic: 'fraudlink.connector.offsets',
      name: 'fraudlink-alerts',
    });
    const unread = { API_KEY: 'a b', API_TLS_CERT: '/certs/tls.crt', SCHEMA_REGISTRY_USERNAME: 'u' };
    const env = { ...unread, KAFKA_BROKERS: 'k:1', CONNECTOR_NAME: 'ours', CONNECTOR_OFFSETS_TOPIC: 'o' };
    expect(loadCursorConfig(env)).toMatchObject({ name: 'ours', offsetsTopic: 'o' });
    const bad = { ...unread, CONNECTOR_NAME: 'no spaces', CONNECTOR_OFFSETS_TOPIC: '..', LOG_LEVEL: 'loud' };
    expect(problemsOf(() => loadCursorConfig(bad)).map((p) => p.variable)).toEqual([
      'KAFKA_BROKERS',
      'CONNECTOR_OFFSETS_TOPIC',
      'CONNECTOR_NAME',
      'LOG_LEVEL',
    ]);
    // As `connector run` refuses it: `reset` would write the JSON cursor record into the Avro alerts.
    expect(
      problemsOf(() =>
        loadCursorConfig({ KAFKA_BROKERS: 'k:1', CONNECTOR_OFFSETS_TOPIC: 'fraud.alerts.v1' }),
      ),
    ).toEqual([
      { variable: 'CONNECTOR_OFFSETS_TOPIC', message: 'must name a different topic from ALERTS_TOPIC' },
    ]);
    expect(
      problemsOf(() =>
        loadCursorConfig({ KAFKA_BROKERS: 'k:1', KAFKA_SSL: 'true', KAFKA_SASL_MECHANISM: 'plain' }),
      ),
    ).toEqual([
      { variable: 'KAFKA_SASL_USERNAME', message: 'is required with KAFKA_SASL_MECHANISM=plain' },
      { variable: 'KAFKA_SASL_PASSWORD', message: 'is required with KAFKA_SASL_MECHANISM=plain' },
    ]);
  });

  it('asks the sandbox for LOG_LEVEL only, and no command about variables it does not read', () => {
    const halfSet = { KAFKA_SASL_MECHANISM: 'plain', API_TLS_CERT: '/certs/tls.crt' };
    expect(loadSandboxConfig({ ...halfSet, LOG_LEVEL: 'debug' })).toEqual({ logLevel: 'debug' });
    expect(loadSandboxConfig({})).toEqual({ logLevel: 'info' });
    expect(problemsOf(() => loadSandboxConfig({ LOG_LEVEL: 'verbose' })).map((p) => p.variable)).toEqual([
      'LOG_LEVEL',
    ]);
    const replay = { KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r', API_TLS_CERT: '/certs/tls.crt' };
    expect(loadReplayConfig(replay).alertsTopic).toBe('fraud.alerts.v1');
  });

  // Both read the services' HTTP_PORT and HTTP_HOST, though they serve nothing: a value meant for
  // the connector's pod (or a stray one) stopped them.
  it('asks replay and api nothing of HTTP_PORT and HTTP_HOST, which only the services use', () => {
    const serviceOnly = { HTTP_PORT: 'metrics', HTTP_HOST: '' };
    expect(loadReplayConfig({ ...minimal, ...serviceOnly })).not.toHaveProperty('http');
    expect(loadApiConfig({ ...minimal, ...serviceOnly })).not.toHaveProperty('http');
    expect(
      problemsOf(() => loadVerifierConfig({ ...minimal, HTTP_PORT: 'metrics' })).map((p) => p.variable),
    ).toEqual(['HTTP_PORT']);
  });

  it('takes an ISO-8601 export start as a date and treats empty strings as unset', () => {
    const config = loadConnectorConfig({
      ...minimal,
      EXPORT_START: '2026-01-01T00:00:00Z',
      ALERTS_TOPIC: '',
    });
    expect(config.connector.exportStart).toEqual(new Date('2026-01-01T00:00:00Z'));
    expect(config.topics.alertsTopic).toBe('fraud.alerts.v1');
  });

  it('reads an export start with an offset and sub-millisecond digits as the same instant', () => {
    const config = loadConnectorConfig({ ...minimal, EXPORT_START: '2026-01-01T02:00:00.123456+02:00' });
    expect(config.connector.exportStart).toEqual(new Date('2026-01-01T00:00:00.123Z'));
  });

  it.each([
    ['a bare number', '1'],
    ['a month and day', 'Jan 5'],
    ['a local time without a zone', '2026-01-01T00:00:00'],
    ['a day February does not have', '2026-02-31T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['hour 25', '2026-01-01T25:00:00Z'],
  ])('refuses as EXPORT_START %s, naming the variable', (_what, value) => {
    const problems = problemsOf(() => loadConnectorConfig({ ...minimal, EXPORT_START: value }));
    expect(problems).toEqual([{ variable: 'EXPORT_START', message: expect.stringContaining('ISO-8601') }]);
  });
});
