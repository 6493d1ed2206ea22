import { ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { clearTextCheck } from './clear-text.ts';
import {
  alertsEnv,
  apiEnv,
  commonEnv,
  connectorEnv,
  DEFAULT_DEADLINE_MS,
  kafkaEnv,
  registryEnv,
  sandboxUpstreamEnv,
  tableEnv,
  verifierEnv,
  z,
} from './schema.ts';
import { API_TLS, kafkaTlsProblems, REGISTRY_TLS, tlsProblems } from './tls.ts';

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * VERIFY_MAX_DEADLINE_MS when unset (or VERIFY_DEFAULT_DEADLINE_MS when that is longer): three times
 * the EPC budget, and under the verifier's 20 s drain, so that a stop answers everything in flight.
 */
const DEFAULT_MAX_DEADLINE_MS = 15_000;

export interface ApiConfig {
  baseUrl: string;
  key: string;
  timeoutMs: number;
  tls?: { certFile?: string; keyFile?: string; caFile?: string };
}

/** Kafka's codecs, as its producers' `compression.type` names them. */
export type KafkaCompression = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

/** OAuth 2 client credentials for SASL/OAUTHBEARER: where and as whom a token is fetched. */
export interface KafkaOAuthConfig {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
}

export type KafkaSaslConfig =
  | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string }
  | ({ mechanism: 'oauthbearer' } & KafkaOAuthConfig);

/** PEM files for TLS to the brokers: a private CA, and a client certificate for mutual TLS. */
export interface KafkaTlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

export interface KafkaConfig {
  brokers: string[];
  clientId: string;
  /** TLS to the brokers, their certificate and host name verified. */
  ssl: boolean;
  tls?: KafkaTlsFiles;
  /** Codec of the record batches fraudlink's producers write; `none` when unset. */
  compression?: KafkaCompression;
  sasl?: KafkaSaslConfig;
}

export interface RegistryConfig {
  url: string;
  auth?: { username: string; password: string };
  /** SCHEMA_REGISTRY_TLS_*: PEM files, read when the client is made. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
}

export interface LoggingConfig {
  logLevel: string;
  /**
   * What travels in clear because ALLOW_INSECURE_TRANSPORT=true let it: each process logs it as a
   * warning at start (warnOfClearText). Empty or absent otherwise.
   */
  inClear?: readonly string[];
}

/** The connector's and the verifier's: ALLOW_SANDBOX_UPSTREAM. */
export interface UpstreamGuardConfig {
  /** Whether an upstream answering with the sandbox's mark is taken (true) or stops the process. */
  allowSandboxUpstream: boolean;
}

/** The services' (connector, verifier): they serve /metrics, /healthz and /readyz. */
export interface CommonConfig extends LoggingConfig {
  http: { port: number; host: string };
}

export interface AlertsTopicsConfig {
  alertsTopic: string;
  alertsPartitions: number;
  alertsDlqTopic: string;
  replicationFactor: number;
}

export interface ConnectorConfig extends CommonConfig, UpstreamGuardConfig {
  api: ApiConfig;
  kafka: KafkaConfig;
  registry: RegistryConfig;
  topics: AlertsTopicsConfig & { offsetsTopic: string };
  connector: {
    name: string;
    exportStart: 'earliest' | Date;
    cursorParam: string;
    pollIntervalMs: number;
    txMaxRows: number;
    txMaxMs: number;
  };
}

export interface VerifierConfig extends CommonConfig, UpstreamGuardConfig {
  api: ApiConfig;
  kafka: KafkaConfig;
  registry: RegistryConfig;
  verifier: {
    requestsTopic: string;
    repliesTopic: string;
    dlqTopic: string;
    groupId: string;
    defaultDeadlineMs: number;
    /**
     * The furthest a request's deadline may lie from when the verifier reads it: a later
     * `vop-deadline` (Java's Long.MAX_VALUE for "none", a typo) is brought in to this, so that one
     * request cannot hold back its partition's replies, or be retried upstream, without end.
     */
    maxDeadlineMs: number;
    concurrency: number;
    /** Least time between the starts of two reply transactions (fewer, larger transactions at low rates). */
    commitIntervalMs: number;
    /** VERIFY_REPLY_TOPICS as a whole-name match (wholeNameMatch): a substring of a name is no match. */
    replyTopicsAllowed: RegExp;
    /**
     * fraudlink's own topics no reply may go to whatever VERIFY_REPLY_TOPICS says: the requests and
     * DLQ topics, and the connector's (ALERTS_TOPIC, ALERTS_DLQ_TOPIC, CONNECTOR_OFFSETS_TOPIC, as
     * set here or their defaults).
     */
    ownTopics: readonly string[];
    partitions: number;
    replicationFactor: number;
  };
}

export interface ReplayConfig extends LoggingConfig {
  kafka: KafkaConfig;
  registry: RegistryConfig;
  alertsTopic: string;
}

/** The alert table service's: its store, and the keys its `/v1` calls need (none: open). */
export interface TableConfig extends CommonConfig {
  kafka: KafkaConfig;
  registry: RegistryConfig;
  alertsTopic: string;
  dbPath: string;
  /** Every `/v1` call must carry one of these in `x-api-key`; undefined when TABLE_API_KEYS is unset. */
  apiKeys?: readonly string[];
}

/**
 * What `connector status` and `connector reset` read: the cursor record, a JSON record on Kafka. They
 * call neither the upstream nor the registry, so they need neither API_KEY nor SCHEMA_REGISTRY_URL.
 */
export interface CursorConfig extends LoggingConfig {
  kafka: KafkaConfig;
  offsetsTopic: string;
  /** CONNECTOR_NAME, the cursor record's key. */
  name: string;
}

/**
 * What `verifier skip` reads: the verifier's requests and DLQ topics and its group, on Kafka alone
 * (neither the upstream nor the registry).
 */
export interface VerifierSkipConfig extends LoggingConfig {
  kafka: KafkaConfig;
  requestsTopic: string;
  dlqTopic: string;
  groupId: string;
}

export interface ApiOnlyConfig extends LoggingConfig {
  api: ApiConfig;
  /** EXPORT_CURSOR_PARAM, for `fraudlink api export`. */
  cursorParam: string;
}

export type Problem = { variable: string; message: string };

/**
 * The variables of `keys` that are set. Empty strings count as unset, as shells and Helm
 * often render absent values that way.
 */
function presentOf(env: Env, keys: readonly string[]): Record<string, string> {
  const present: Record<string, string> = {};
  for (const key of keys) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') present[key] = value;
  }
  return present;
}

/** Parses `env` against `shape`; every problem is reported at once, by variable name, without values. */
function parse<S extends z.ZodRawShape>(env: Env, shape: S): z.output<z.ZodObject<S>> {
  const result = z.object(shape).safeParse(presentOf(env, Object.keys(shape)));
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => ({
      variable: String(issue.path[0] ?? '(environment)'),
      message: issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message,
    })),
  );
}

function apiOf(e: z.output<z.ZodObject<typeof apiEnv>>): ApiConfig {
  const api: ApiConfig = {
    baseUrl: e.API_BASE_URL.replace(/\/+$/, ''),
    key: e.API_KEY,
    timeoutMs: e.API_TIMEOUT_MS,
  };
  const tls = tlsFilesOf(e.API_TLS_CA, e.API_TLS_CERT, e.API_TLS_KEY);
  if (tls) api.tls = tls;
  return api;
}

/** The PEM files that a component's three TLS variables name; undefined when none is set. */
function tlsFilesOf(
  caFile: string | undefined,
  certFile: string | undefined,
  keyFile: string | undefined,
): KafkaTlsFiles | undefined {
  const files: KafkaTlsFiles = {
    ...(caFile && { caFile }),
    ...(certFile && { certFile }),
    ...(keyFile && { keyFile }),
  };
  return Object.keys(files).length > 0 ? files : undefined;
}

function kafkaSaslOf(e: z.output<z.ZodObject<typeof kafkaEnv>>): KafkaSaslConfig | undefined {
  const mechanism = e.KAFKA_SASL_MECHANISM;
  if (mechanism === 'oauthbearer') {
    if (!e.KAFKA_SASL_OAUTH_TOKEN_URL || !e.KAFKA_SASL_OAUTH_CLIENT_ID || !e.KAFKA_SASL_OAUTH_CLIENT_SECRET) {
      return undefined;
    }
    return {
      mechanism,
      tokenUrl: e.KAFKA_SASL_OAUTH_TOKEN_URL,
      clientId: e.KAFKA_SASL_OAUTH_CLIENT_ID,
      clientSecret: e.KAFKA_SASL_OAUTH_CLIENT_SECRET,
      ...(e.KAFKA_SASL_OAUTH_SCOPE && { scope: e.KAFKA_SASL_OAUTH_SCOPE }),
    };
  }
  if (mechanism && e.KAFKA_SASL_USERNAME && e.KAFKA_SASL_PASSWORD) {
    return { mechanism, username: e.KAFKA_SASL_USERNAME, password: e.KAFKA_SASL_PASSWORD };
  }
  return undefined;
}

function kafkaOf(e: z.output<z.ZodObject<typeof kafkaEnv>>): KafkaConfig {
  const tls = tlsFilesOf(e.KAFKA_TLS_CA, e.KAFKA_TLS_CERT, e.KAFKA_TLS_KEY);
  const kafka: KafkaConfig = {
    brokers: e.KAFKA_BROKERS.split(',').map((b) => b.trim()),
    clientId: e.KAFKA_CLIENT_ID,
    // A TLS file implies TLS; KAFKA_SSL=false beside one is refused (kafkaProblems).
    ssl: e.KAFKA_SSL ?? tls !== undefined,
    compression: e.KAFKA_COMPRESSION,
  };
  if (tls) kafka.tls = tls;
  const sasl = kafkaSaslOf(e);
  if (sasl) kafka.sasl = sasl;
  return kafka;
}

function registryOf(e: z.output<z.ZodObject<typeof registryEnv>>): RegistryConfig {
  const registry: RegistryConfig = { url: e.SCHEMA_REGISTRY_URL.replace(/\/+$/, '') };
  if (e.SCHEMA_REGISTRY_USERNAME && e.SCHEMA_REGISTRY_PASSWORD) {
    registry.auth = { username: e.SCHEMA_REGISTRY_USERNAME, password: e.SCHEMA_REGISTRY_PASSWORD };
  }
  const tls = tlsFilesOf(e.SCHEMA_REGISTRY_TLS_CA, e.SCHEMA_REGISTRY_TLS_CERT, e.SCHEMA_REGISTRY_TLS_KEY);
  if (tls) registry.tls = tls;
  return registry;
}

const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'];
const SASL_PASSWORD_VARIABLES = ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'];
const SASL_OAUTH_REQUIRED = [
  'KAFKA_SASL_OAUTH_TOKEN_URL',
  'KAFKA_SASL_OAUTH_CLIENT_ID',
  'KAFKA_SASL_OAUTH_CLIENT_SECRET',
];
const SASL_OAUTH_VARIABLES = [...SASL_OAUTH_REQUIRED, 'KAFKA_SASL_OAUTH_SCOPE'];

/**
 * The SASL variables each mechanism needs, and those it does not take: a username beside
 * `oauthbearer`, or a token URL beside `scram-sha-512`, is a setting that would be silently ignored.
 */
function kafkaSaslProblems(env: Env): Problem[] {
  const set = (k: string) => (env[k] ?? '').trim() !== '';
  const mechanism = (env.KAFKA_SASL_MECHANISM ?? '').trim();
  const others = [...SASL_PASSWORD_VARIABLES, ...SASL_OAUTH_VARIABLES].filter(set);
  if (mechanism === '') {
    if (others.length === 0) return [];
    return [{ variable: 'KAFKA_SASL_MECHANISM', message: `is required when ${others.join(', ')} is set` }];
  }
  // An unknown mechanism is reported by its own rule; what it would need is unknown.
  if (!SASL_MECHANISMS.includes(mechanism)) return [];
  const oauth = mechanism === 'oauthbearer';
  const needed = oauth ? SASL_OAUTH_REQUIRED : SASL_PASSWORD_VARIABLES;
  const unused = (oauth ? SASL_PASSWORD_VARIABLES : SASL_OAUTH_VARIABLES).filter(set);
  return [
    ...needed
      .filter((k) => !set(k))
      .map((variable) => ({ variable, message: `is required with KAFKA_SASL_MECHANISM=${mechanism}` })),
    ...unused.map((variable) => ({
      variable,
      message: oauth
        ? 'is not used with KAFKA_SASL_MECHANISM=oauthbearer, whose client authenticates with KAFKA_SASL_OAUTH_CLIENT_ID and KAFKA_SASL_OAUTH_CLIENT_SECRET'
        : 'is used only with KAFKA_SASL_MECHANISM=oauthbearer',
    })),
  ];
}

/** Rules that span several variables, reported together with the per-variable problems. */
function crossCheck(env: Env): Problem[] {
  const problems: Problem[] = [];
  const set = (k: string) => (env[k] ?? '').trim() !== '';
  problems.push(...kafkaSaslProblems(env));
  if (set('SCHEMA_REGISTRY_USERNAME') !== set('SCHEMA_REGISTRY_PASSWORD')) {
    problems.push({
      variable: set('SCHEMA_REGISTRY_USERNAME') ? 'SCHEMA_REGISTRY_PASSWORD' : 'SCHEMA_REGISTRY_USERNAME',
      message: 'SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD go together',
    });
  }
  const maxDeadline = Number(env.VERIFY_MAX_DEADLINE_MS);
  const defaultDeadline = set('VERIFY_DEFAULT_DEADLINE_MS')
    ? Number(env.VERIFY_DEFAULT_DEADLINE_MS)
    : DEFAULT_DEADLINE_MS;
  if (set('VERIFY_MAX_DEADLINE_MS') && maxDeadline < defaultDeadline) {
    problems.push({
      variable: 'VERIFY_MAX_DEADLINE_MS',
      message: `must be at least VERIFY_DEFAULT_DEADLINE_MS (${defaultDeadline})`,
    });
  }
  return problems;
}

/**
 * Each of `variables` names a topic with its own role in one command, so no two may name the same
 * topic: a requests topic that is also the replies topic feeds every reply back in as a request, and
 * the connector's cursor, DLQ rows and events cannot share one. Kafka refuses to create a topic whose
 * name differs from an existing one only by '.' against '_', so those clash too. Defaults count; a
 * variable that is invalid on its own is reported by `parse` and left out here.
 */
function topicClashes(env: Env, shape: z.ZodRawShape, variables: readonly string[]): Problem[] {
  const problems: Problem[] = [];
  const present = presentOf(env, variables);
  const seen = new Map<string, { variable: string; name: string }>();
  for (const variable of variables) {
    const schema = shape[variable];
    if (schema === undefined) throw new Error(`${variable} is not in this command's configuration`);
    const result = z.safeParse(schema, present[variable]);
    if (!result.success || typeof result.data !== 'string') continue;
    const name = result.data;
    const first = seen.get(name.replaceAll('.', '_'));
    if (first === undefined) {
      seen.set(name.replaceAll('.', '_'), { variable, name });
    } else {
      const why = first.name === name ? '' : ' (Kafka treats "." and "_" in topic names as the same)';
      problems.push({ variable, message: `must name a different topic from ${first.variable}${why}` });
    }
  }
  return problems;
}

function common(e: z.output<z.ZodObject<typeof commonEnv>>): CommonConfig {
  return { http: { port: e.HTTP_PORT, host: e.HTTP_HOST }, logLevel: e.LOG_LEVEL };
}

function freeze<T>(value: T): T {
  if (value && typeof value === 'object' && !(value instanceof RegExp) && !(value instanceof Date)) {
    for (const v of Object.values(value)) freeze(v);
    Object.freeze(value);
  }
  return value;
}

function load<S extends z.ZodRawShape, T>(
  env: Env,
  shape: S,
  distinctTopics: readonly (keyof S & string)[],
  build: (e: z.output<z.ZodObject<S>>) => T,
): T & { inClear?: readonly string[] } {
  let parsed: z.output<z.ZodObject<S>> | undefined;
  const problems: Problem[] = [];
  try {
    parsed = parse(env, shape);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  // Only the rules of this command's variables: the sandbox reads LOG_LEVEL alone.
  const clearText = clearTextCheck(env, shape);
  const rules = [
    ...crossCheck(env),
    ...('API_BASE_URL' in shape ? tlsProblems(env, API_TLS) : []),
    ...('SCHEMA_REGISTRY_URL' in shape ? tlsProblems(env, REGISTRY_TLS) : []),
    ...('KAFKA_BROKERS' in shape ? kafkaTlsProblems(env) : []),
    ...clearText.problems,
  ];
  const own = rules.filter((p) => p.variable in shape);
  problems.push(...own, ...topicClashes(env, shape, distinctTopics));
  if (parsed === undefined || problems.length > 0) throw new ConfigError(problems);
  const { inClear } = clearText;
  return freeze({ ...build(parsed), ...(inClear.length > 0 && { inClear }) });
}

/** The connector's topics, which must be three different ones. */
const CONNECTOR_TOPICS = ['ALERTS_TOPIC', 'ALERTS_DLQ_TOPIC', 'CONNECTOR_OFFSETS_TOPIC'] as const;

export function loadConnectorConfig(env: Env): ConnectorConfig {
  const shape = {
    ...apiEnv,
    ...sandboxUpstreamEnv,
    ...kafkaEnv,
    ...registryEnv,
    ...alertsEnv,
    ...connectorEnv,
    ...commonEnv,
  };
  return load(env, shape, CONNECTOR_TOPICS, (e) => ({
    ...common(e),
    allowSandboxUpstream: e.ALLOW_SANDBOX_UPSTREAM,
    api: apiOf(e),
    kafka: kafkaOf(e),
    registry: registryOf(e),
    topics: {
      alertsTopic: e.ALERTS_TOPIC,
      alertsPartitions: e.ALERTS_TOPIC_PARTITIONS,
      alertsDlqTopic: e.ALERTS_DLQ_TOPIC,
      replicationFactor: e.TOPIC_REPLICATION_FACTOR,
      offsetsTopic: e.CONNECTOR_OFFSETS_TOPIC,
    },
    connector: {
      name: e.CONNECTOR_NAME,
      exportStart: e.EXPORT_START,
      cursorParam: e.EXPORT_CURSOR_PARAM,
      pollIntervalMs: e.POLL_INTERVAL_MS,
      txMaxRows: e.CONNECTOR_TX_MAX_ROWS,
      txMaxMs: e.CONNECTOR_TX_MAX_MS,
    },
  }));
}

export function loadCursorConfig(env: Env): CursorConfig {
  // The alert topics only to refuse an offsets topic that is one of them, as `connector run` does:
  // `reset` would write its JSON cursor record into the connector's Avro alerts or its DLQ.
  const shape = {
    ...kafkaEnv,
    ALERTS_TOPIC: alertsEnv.ALERTS_TOPIC,
    ALERTS_DLQ_TOPIC: alertsEnv.ALERTS_DLQ_TOPIC,
    CONNECTOR_OFFSETS_TOPIC: connectorEnv.CONNECTOR_OFFSETS_TOPIC,
    CONNECTOR_NAME: connectorEnv.CONNECTOR_NAME,
    LOG_LEVEL: commonEnv.LOG_LEVEL,
  };
  return load(env, shape, CONNECTOR_TOPICS, (e) => ({
    logLevel: e.LOG_LEVEL,
    kafka: kafkaOf(e),
    offsetsTopic: e.CONNECTOR_OFFSETS_TOPIC,
    name: e.CONNECTOR_NAME,
  }));
}

/**
 * A regex that matches a whole name only: `^(?:source)$`. An allow-list regex tested as a substring
 * match would let a broad one (`vop\.verification\.replies\.`) admit `fraud.alerts.v1` or
 * `x.vop.verification.replies.y`.
 */
export function wholeNameMatch(source: string): RegExp {
  return new RegExp(`^(?:${source})$`);
}

export function loadVerifierConfig(env: Env): VerifierConfig {
  return load(
    env,
    {
      ...apiEnv,
      ...sandboxUpstreamEnv,
      ...kafkaEnv,
      ...registryEnv,
      ...verifierEnv,
      TOPIC_REPLICATION_FACTOR: alertsEnv.TOPIC_REPLICATION_FACTOR,
      // The connector's topics only to refuse them as reply topics.
      ALERTS_TOPIC: alertsEnv.ALERTS_TOPIC,
      ALERTS_DLQ_TOPIC: alertsEnv.ALERTS_DLQ_TOPIC,
      CONNECTOR_OFFSETS_TOPIC: connectorEnv.CONNECTOR_OFFSETS_TOPIC,
      ...commonEnv,
    },
    ['VERIFY_REQUESTS_TOPIC', 'VERIFY_REPLIES_TOPIC', 'VERIFY_DLQ_TOPIC'],
    (e) => ({
      ...common(e),
      allowSandboxUpstream: e.ALLOW_SANDBOX_UPSTREAM,
      api: apiOf(e),
      kafka: kafkaOf(e),
      registry: registryOf(e),
      verifier: {
        requestsTopic: e.VERIFY_REQUESTS_TOPIC,
        repliesTopic: e.VERIFY_REPLIES_TOPIC,
        dlqTopic: e.VERIFY_DLQ_TOPIC,
        groupId: e.VERIFY_GROUP_ID,
        defaultDeadlineMs: e.VERIFY_DEFAULT_DEADLINE_MS,
        maxDeadlineMs:
          e.VERIFY_MAX_DEADLINE_MS ?? Math.max(DEFAULT_MAX_DEADLINE_MS, e.VERIFY_DEFAULT_DEADLINE_MS),
        concurrency: e.VERIFY_CONCURRENCY,
        commitIntervalMs: e.VERIFY_COMMIT_INTERVAL_MS,
        replyTopicsAllowed: wholeNameMatch(e.VERIFY_REPLY_TOPICS),
        ownTopics: [
          e.VERIFY_REQUESTS_TOPIC,
          e.VERIFY_DLQ_TOPIC,
          e.ALERTS_TOPIC,
          e.ALERTS_DLQ_TOPIC,
          e.CONNECTOR_OFFSETS_TOPIC,
        ],
        partitions: e.VERIFY_TOPIC_PARTITIONS,
        replicationFactor: e.TOPIC_REPLICATION_FACTOR,
      },
    }),
  );
}

export function loadVerifierSkipConfig(env: Env): VerifierSkipConfig {
  const { VERIFY_REQUESTS_TOPIC, VERIFY_DLQ_TOPIC, VERIFY_GROUP_ID } = verifierEnv;
  return load(
    env,
    { ...kafkaEnv, VERIFY_REQUESTS_TOPIC, VERIFY_DLQ_TOPIC, VERIFY_GROUP_ID, LOG_LEVEL: commonEnv.LOG_LEVEL },
    ['VERIFY_REQUESTS_TOPIC', 'VERIFY_DLQ_TOPIC'],
    (e) => ({
      logLevel: e.LOG_LEVEL,
      kafka: kafkaOf(e),
      requestsTopic: e.VERIFY_REQUESTS_TOPIC,
      dlqTopic: e.VERIFY_DLQ_TOPIC,
      groupId: e.VERIFY_GROUP_ID,
    }),
  );
}

export function loadReplayConfig(env: Env): ReplayConfig {
  return load(
    env,
    { ...kafkaEnv, ...registryEnv, ALERTS_TOPIC: alertsEnv.ALERTS_TOPIC, LOG_LEVEL: commonEnv.LOG_LEVEL },
    [],
    (e) => ({
      logLevel: e.LOG_LEVEL,
      kafka: kafkaOf(e),
      registry: registryOf(e),
      alertsTopic: e.ALERTS_TOPIC,
    }),
  );
}

export function loadTableConfig(env: Env): TableConfig {
  return load(
    env,
    { ...kafkaEnv, ...registryEnv, ALERTS_TOPIC: alertsEnv.ALERTS_TOPIC, ...tableEnv, ...commonEnv },
    [],
    (e) => ({
      ...common(e),
      kafka: kafkaOf(e),
      registry: registryOf(e),
      alertsTopic: e.ALERTS_TOPIC,
      dbPath: e.TABLE_DB_PATH,
      ...(e.TABLE_API_KEYS && { apiKeys: e.TABLE_API_KEYS }),
    }),
  );
}

export function loadApiConfig(env: Env): ApiOnlyConfig {
  return load(
    env,
    { ...apiEnv, EXPORT_CURSOR_PARAM: connectorEnv.EXPORT_CURSOR_PARAM, LOG_LEVEL: commonEnv.LOG_LEVEL },
    [],
    (e) => ({ logLevel: e.LOG_LEVEL, api: apiOf(e), cursorParam: e.EXPORT_CURSOR_PARAM }),
  );
}

/**
 * The sandbox's variables: its log level, and SANDBOX_ADMIN_TOKEN (as --admin-token, which wins);
 * its other settings are command-line flags.
 */
export function loadSandboxConfig(env: Env): { logLevel: string; adminToken?: string } {
  return load(
    env,
    { LOG_LEVEL: commonEnv.LOG_LEVEL, SANDBOX_ADMIN_TOKEN: apiEnv.API_KEY.optional() },
    [],
    (e) => ({
      logLevel: e.LOG_LEVEL,
      ...(e.SANDBOX_ADMIN_TOKEN !== undefined && { adminToken: e.SANDBOX_ADMIN_TOKEN }),
    }),
  );
}

/**
 * Logs, once at start, what travels in clear because ALLOW_INSECURE_TRANSPORT=true let it: nothing
 * when nothing does.
 */
export function warnOfClearText(logger: Pick<Logger, 'warn'>, config: LoggingConfig): void {
  const inClear = config.inClear ?? [];
  if (inClear.length === 0) return;
  logger.warn(
    { inClear, variable: 'ALLOW_INSECURE_TRANSPORT' },
    `ALLOW_INSECURE_TRANSPORT=true: travelling in clear: ${inClear.join('; ')}`,
  );
}
