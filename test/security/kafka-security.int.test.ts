import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { loadConnectorConfig, loadReplayConfig, loadVerifierConfig } from '../../src/config/index.ts';
import { startConnector } from '../../src/connector/index.ts';
import { createKafkaClient } from '../../src/kafka/index.ts';
import { silentLogger } from '../../src/logger.ts';
import { replayAlerts } from '../../src/replay/index.ts';
import { clientConfigOf, createVerificationClient } from '../../src/requester/index.ts';
import { createSandbox, sandboxUpstreamEnv } from '../../src/sandbox/index.ts';
import { SCRAM_USER, type SecuredKafka, startSecuredKafka } from '../../src/stack/secured.ts';
import { startVerifier } from '../../src/verifier/index.ts';
import { runCli } from '../helpers/cli.ts';
import { collect } from '../helpers/kafka.ts';
import { OAUTH_AUDIENCE, type OAuthServer, startOAuthServer } from '../helpers/oauth-server.ts';
import { connectorNamesEnv, uniqueName, verifierNamesEnv } from '../helpers/stack.ts';

const IBAN = 'DE89370400440532013000';

let broker: SecuredKafka;
let oauth: OAuthServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fraudlink-secured-kafka-'));
  oauth = await startOAuthServer();
  broker = await startSecuredKafka({
    dir,
    ownerPid: process.pid,
    oauth: { jwksUrl: oauth.jwksUrl, audience: OAUTH_AUDIENCE },
  });
});

afterAll(async () => {
  await broker?.stop();
  await oauth?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Listener = 'tls' | 'mtls' | 'scram' | 'oauth';

/** The KAFKA_* variables of a client of `listener`, as an operator would set them. */
function kafkaEnv(listener: Listener): Record<string, string> {
  const certs = broker.certificates;
  const base = { KAFKA_BROKERS: broker.listeners[listener], KAFKA_TLS_CA: certs.ca.cert };
  switch (listener) {
    case 'tls':
      // KAFKA_SSL left unset: the CA file turns TLS on.
      return base;
    case 'mtls':
      return { ...base, KAFKA_TLS_CERT: certs.client.cert, KAFKA_TLS_KEY: certs.client.key };
    case 'scram':
      return {
        ...base,
        KAFKA_SSL: 'true',
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: SCRAM_USER.username,
        KAFKA_SASL_PASSWORD: SCRAM_USER.password,
      };
    case 'oauth':
      return {
        ...base,
        KAFKA_SSL: 'true',
        KAFKA_SASL_MECHANISM: 'oauthbearer',
        KAFKA_SASL_OAUTH_TOKEN_URL: oauth.tokenUrl,
        KAFKA_SASL_OAUTH_CLIENT_ID: oauth.client.id,
        KAFKA_SASL_OAUTH_CLIENT_SECRET: oauth.client.secret,
        KAFKA_SASL_OAUTH_SCOPE: 'kafka',
      };
  }
}

/** A sandbox, and the environment of a connector and a verifier on `listener` pointed at it. */
async function secureRound(listener: Listener) {
  const sandbox = createSandbox({ port: 0, alerts: 40, changesPerSec: 0, pageSize: 15, rateLimit: 0 });
  const { url } = await sandbox.start();
  onTestFinished(() => sandbox.stop());
  const prefix = uniqueName(`sec-${listener}`);
  const env = {
    ...kafkaEnv(listener),
    SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
    ...sandboxUpstreamEnv(url),
    ...connectorNamesEnv(prefix),
    ALERTS_TOPIC_PARTITIONS: '2',
    POLL_INTERVAL_MS: '50',
    ...verifierNamesEnv(prefix, `${prefix}.vop-dlq`),
    VERIFY_TOPIC_PARTITIONS: '2',
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
  };
  return { sandbox, env };
}

describe('Kafka over TLS, mutual TLS, SCRAM-SHA-512 and OAUTHBEARER on a secured broker', () => {
  for (const listener of ['tls', 'mtls', 'scram', 'oauth'] as const) {
    it(`publishes exactly once, answers through the requester client and replays on the ${listener} listener`, async () => {
      const { sandbox, env } = await secureRound(listener);
      const logger = silentLogger();
      const issuedBefore = oauth.issued.length;

      const connectorConfig = loadConnectorConfig(env);
      const connector = await startConnector(connectorConfig, logger);
      onTestFinished(() => connector.stop());
      const kafka = createKafkaClient({ config: connectorConfig.kafka, logger });
      const events = await collect(kafka, env.ALERTS_TOPIC);
      const rows = sandbox.currentRows().length;
      await events.until((r) => r.length >= rows, 60_000);
      await connector.stop();

      // The CLI's Kafka commands take the same settings: the cursor the connector stored.
      const status = runCli(['connector', 'status'], env);
      expect(await status.exited).toBe(0);
      expect(JSON.parse(status.stdout())).toMatchObject({ connector: env.CONNECTOR_NAME });

      const replayed = await replayAlerts(loadReplayConfig(env));
      // Every row once: no event lost, none published twice.
      expect(replayed.events).toBe(rows);
      const ids = new Set(events.records.map((r) => r.headers['event-id']?.toString()));
      expect(ids.size).toBe(rows);
      expect(replayed.alerts.size).toBe(sandbox.currentRows().filter((r) => r.isActive).length);

      const verifierConfig = loadVerifierConfig(env);
      const verifier = await startVerifier(verifierConfig, logger, { instanceId: listener });
      onTestFinished(() => verifier.stop());
      const client = createVerificationClient(clientConfigOf(verifierConfig));
      onTestFinished(() => client.close());
      const reply = await client.verify(
        { iban: IBAN, partyName: sandbox.holderName(IBAN) },
        { timeoutMs: 30_000 },
      );
      expect(reply).toMatchObject({ outcome: 'COMPLETED', nameMatch: 'MTCH' });

      if (listener === 'oauth') {
        // Every client of the round authenticated with a token of the OAuth server; one token
        // serves them all until it is due for refresh.
        expect(oauth.issued.length).toBeGreaterThan(issuedBefore);
        expect(oauth.issued.at(-1)).toEqual({ clientId: oauth.client.id, scope: 'kafka' });
      }
    });
  }
});

describe('Kafka security failures: typed, named, with their exit code, and at once', () => {
  /** `fraudlink connector status` (a short Kafka command) with `env`; its exit code and stderr. */
  async function status(env: Record<string, string>) {
    const cli = runCli(['connector', 'status'], {
      ...env,
      CONNECTOR_NAME: uniqueName('sec-fail'),
      CONNECTOR_OFFSETS_TOPIC: uniqueName('sec-fail-offsets'),
      LOG_LEVEL: 'info',
    });
    const started = Date.now();
    const code = await cli.exited;
    return { code, stderr: cli.stderr(), ms: Date.now() - started };
  }

  it('refuses a wrong SCRAM password: exit 3, naming KAFKA_SASL_PASSWORD', async () => {
    const result = await status({ ...kafkaEnv('scram'), KAFKA_SASL_PASSWORD: 'not-the-password' });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('KAFKA_AUTHENTICATION');
    expect(result.stderr).toContain('KAFKA_SASL_PASSWORD');
    expect(result.stderr).not.toContain('not-the-password');
  });

  it('refuses a broker certificate from a CA it does not trust: exit 2, naming KAFKA_TLS_CA', async () => {
    const result = await status({ ...kafkaEnv('tls'), KAFKA_TLS_CA: broker.certificates.foreignCa.cert });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('KAFKA_TLS');
    expect(result.stderr).toContain('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    // Not retried as an outage: kafkajs's retries alone would take well over ten seconds.
    expect(result.ms).toBeLessThan(10_000);
  });

  it('refuses a broker certificate for another host name: exit 2', async () => {
    const result = await status({ ...kafkaEnv('tls'), KAFKA_BROKERS: broker.listeners.otherName });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(result.ms).toBeLessThan(10_000);
  });

  it('is refused by a broker that requires a client certificate it was not given: exit 3', async () => {
    const result = await status({ ...kafkaEnv('tls'), KAFKA_BROKERS: broker.listeners.mtls });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('KAFKA_TLS_CERT');
    expect(result.ms).toBeLessThan(10_000);
  });

  it('stops the connector when the OAuth token endpoint refuses the client: exit 3, the secret never logged', async () => {
    const { env } = await secureRound('oauth');
    const secret = 'wrong-secret-never-logged';
    const connector = runCli(['connector'], {
      ...env,
      KAFKA_SASL_OAUTH_CLIENT_SECRET: secret,
      LOG_LEVEL: 'debug',
    });
    expect(await connector.exited).toBe(3);
    expect(connector.stderr()).toContain(
      'the OAuth token endpoint (KAFKA_SASL_OAUTH_TOKEN_URL) refused the client',
    );
    expect(connector.stderr()).toContain('invalid_client');
    expect(connector.stderr()).not.toContain(secret);
  });
});
