import { join } from 'node:path';
import { silentLogger } from '../logger.ts';
import { createTestCertificates, type TestCertificates, writePemKeystore } from './certs.ts';
import { ensureKafka } from './install.ts';
import { requireJava } from './java.ts';
import { stopProcess } from './process.ts';
import { freePort, KAFKA_SETTINGS, launchKafka, withProperties } from './services.ts';

/** The SCRAM-SHA-512 user the secured broker knows from its first start (created at format time). */
export const SCRAM_USER = { username: 'fraudlink', password: 'fraudlink-scram-secret' } as const;

export interface SecuredKafkaOptions {
  /** Where the broker's data, settings and certificates go (a fresh folder). */
  dir: string;
  /** The stack dies with this process (tests). */
  ownerPid?: number;
  /** The OAUTHBEARER listener's validation: tokens are RS256 JWTs checked against this JWKS. */
  oauth: { jwksUrl: string; audience: string };
}

/** host:port of each secured listener, all on 127.0.0.1. */
export interface SecuredListeners {
  /** TLS, no client authentication. */
  tls: string;
  /** TLS with required client certificates (mutual TLS). */
  mtls: string;
  /** SASL_SSL with SCRAM-SHA-512 (SCRAM_USER). */
  scram: string;
  /** SASL_SSL with OAUTHBEARER, JWTs validated by Kafka's own OIDC handler. */
  oauth: string;
  /** TLS with a certificate from the same CA for another host name: fails host name verification. */
  otherName: string;
  /** Clear text, for the broker itself (inter-broker) and for tests' set-up. */
  plain: string;
}

export interface SecuredKafka {
  pid: number;
  logFile: string;
  listeners: SecuredListeners;
  certificates: TestCertificates;
  stop(): Promise<void>;
}

const listenerNames = ['PLAIN', 'CONTROLLER', 'TLS', 'MTLS', 'SCRAM', 'OAUTH', 'OTHERNAME'] as const;
type ListenerName = (typeof listenerNames)[number];

const OAUTH_JAAS = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;';
const OAUTH_VALIDATOR = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler';

/** The secured listeners' settings: PEM key and trust stores, client auth, SASL mechanisms. */
function securitySettings(
  ports: Record<ListenerName, number>,
  keystores: { server: string; otherName: string; trust: string },
  oauth: SecuredKafkaOptions['oauth'],
): string[] {
  const address = (name: ListenerName) => `${name}://127.0.0.1:${ports[name]}`;
  const advertised = listenerNames.filter((n) => n !== 'CONTROLLER').map(address);
  return [
    `controller.quorum.voters=1@127.0.0.1:${ports.CONTROLLER}`,
    `listeners=${listenerNames.map(address).join(',')}`,
    `advertised.listeners=${advertised.join(',')}`,
    'listener.security.protocol.map=PLAIN:PLAINTEXT,CONTROLLER:PLAINTEXT,TLS:SSL,MTLS:SSL,SCRAM:SASL_SSL,OAUTH:SASL_SSL,OTHERNAME:SSL',
    'inter.broker.listener.name=PLAIN',
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${keystores.server}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${keystores.trust}`,
    'listener.name.mtls.ssl.client.auth=required',
    `listener.name.othername.ssl.keystore.location=${keystores.otherName}`,
    'listener.name.scram.sasl.enabled.mechanisms=SCRAM-SHA-512',
    'listener.name.scram.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER',
    `listener.name.oauth.oauthbearer.sasl.jaas.config=${OAUTH_JAAS}`,
    `listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=${OAUTH_VALIDATOR}`,
    `sasl.oauthbearer.jwks.endpoint.url=${oauth.jwksUrl}`,
    `sasl.oauthbearer.expected.audience=${oauth.audience}`,
  ];
}

/**
 * One KRaft broker (Kafka from the same Maven jars as the stack's) with a listener for each way
 * fraudlink secures its Kafka connections: TLS, mutual TLS, SASL_SSL SCRAM-SHA-512 and SASL_SSL
 * OAUTHBEARER, plus a TLS listener whose certificate names another host. Its certificates come from
 * a CA generated here; the controller and inter-broker listeners stay clear text on loopback.
 */
export async function startSecuredKafka(options: SecuredKafkaOptions): Promise<SecuredKafka> {
  const [{ java }, libs] = await Promise.all([requireJava(17, 'Kafka'), ensureKafka(silentLogger())]);
  const certificates = await createTestCertificates(join(options.dir, 'certs'));
  const keystores = {
    server: writePemKeystore(join(options.dir, 'certs', 'server.pem'), certificates.server),
    otherName: writePemKeystore(join(options.dir, 'certs', 'other-name.pem'), certificates.otherName),
    trust: certificates.ca.cert,
  };
  const ports = {} as Record<ListenerName, number>;
  for (const name of listenerNames) ports[name] = await freePort();
  const properties = withProperties(KAFKA_SETTINGS, securitySettings(ports, keystores, options.oauth));
  const { pid, logFile } = await launchKafka(
    { java, libs, dir: options.dir, ...(options.ownerPid !== undefined && { ownerPid: options.ownerPid }) },
    properties,
    `127.0.0.1:${ports.PLAIN}`,
    {
      formatArgs: [
        '--add-scram',
        `SCRAM-SHA-512=[name=${SCRAM_USER.username},password=${SCRAM_USER.password}]`,
      ],
      // Kafka 4 fetches OAuth URLs (the JWKS) only when this system property allows them.
      jvmArgs: [`-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${options.oauth.jwksUrl}`],
    },
  );
  const at = (name: ListenerName) => `127.0.0.1:${ports[name]}`;
  return {
    pid,
    logFile,
    certificates,
    listeners: {
      tls: at('TLS'),
      mtls: at('MTLS'),
      scram: at('SCRAM'),
      oauth: at('OAUTH'),
      otherName: at('OTHERNAME'),
      plain: at('PLAIN'),
    },
    stop: () => stopProcess(pid),
  };
}
