import { z } from 'zod';
import { parseInstant } from '../instant.ts';

const text = z.string().trim().min(1, 'must not be empty');
// The export cursor's query parameter: any name a query can carry but the export's other parameter,
// which the cursor would overwrite.
const cursorParam = text.refine(
  (v) => v !== 'updatedAfter',
  "must not be updatedAfter, the export's other parameter",
);
// Sent as the x-api-key header; the interface gives keys no format, so any header-safe token.
const apiKey = text.regex(
  /^[\x21-\x7e]+$/,
  'must be printable ASCII without spaces (it is an HTTP header value)',
);
/** Rules that code outside the configuration applies too: the sandbox to its options and flags. */
const sharedRules = { nonEmpty: text, cursorParam, apiKey };
export type SharedRule = keyof typeof sharedRules;

/**
 * `value` as the configuration takes a variable under `rule` (trimmed), or what the rule finds wrong
 * with it (its first message).
 */
export function takenBy(rule: SharedRule, value: string): { value: string } | { problem: string } {
  const result = sharedRules[rule].safeParse(value);
  if (result.success) return { value: result.data };
  return { problem: result.error.issues[0]?.message ?? 'is not valid' };
}

const flag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], { message: 'must be true or false' })
  .transform((v) => ['true', '1', 'yes', 'on'].includes(v));
// The range is checked here rather than by z.number(): past 2^53 its .int() adds a second message of
// its own for the same variable, and past 1e308 the value is Infinity, which it refuses as not a
// number. Number() keeps the order of any digit string, so the bounds hold for those too.
const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^-?\d+$/, 'must be an integer')
    .transform((v, ctx) => {
      const n = Number(v);
      if (n >= min && n <= max) return n;
      ctx.addIssue({
        code: 'custom',
        message: n < min ? `must be at least ${min}` : `must be at most ${max}`,
      });
      return z.NEVER;
    });
const httpUrl = text.refine((v) => {
  try {
    const url = new URL(v);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}, 'must be an http(s) URL');
/** The service's base URL: paths are appended to it, so a query or fragment would be dropped, and so
 * would user:password (undici sends no credentials from a URL). */
const baseUrl = httpUrl.refine((v) => {
  if (!URL.canParse(v)) return true; // reported by httpUrl
  const url = new URL(v);
  return url.search === '' && url.hash === '' && url.username === '' && url.password === '';
}, 'must be a base URL without a query, fragment or user:password (requests would drop them; the API key goes in API_KEY)');
// Kafka's own rule (org.apache.kafka.common.internals.Topic): 1-249 of these characters, and not
// "." or "..".
const topic = text
  .regex(/^[a-zA-Z0-9._-]{1,249}$/, 'must be a valid Kafka topic name')
  .refine((v) => v !== '.' && v !== '..', 'must be a valid Kafka topic name, not "." or ".."');
const brokerList = text.refine(
  (v) =>
    v.split(',').every((b) => {
      const port = /^[^\s:,]+:(\d{1,5})$/.exec(b.trim())?.[1];
      return port !== undefined && Number(port) >= 1 && Number(port) <= 65_535;
    }),
  'must be a comma-separated list of host:port, each port 1 to 65535',
);
// 0 is in no broker's range (CreateTopics answers INVALID_REPLICATION_FACTOR); -1 is the broker's default.
const replicationFactor = int(-1, 32).refine((v) => v !== 0, 'must be -1 (the broker default) or 1 to 32');
const regex = text.refine((v) => {
  try {
    new RegExp(v);
    return true;
  } catch {
    return false;
  }
}, 'must be a valid regular expression');
const isoOrEarliest = text.transform((v, ctx): 'earliest' | Date => {
  if (v === 'earliest') return v;
  const ms = parseInstant(v);
  if (ms !== null) return new Date(ms);
  ctx.addIssue({
    code: 'custom',
    message: 'must be "earliest" or a valid ISO-8601 instant with a zone, e.g. 2026-01-31T09:30:00Z',
  });
  return z.NEVER;
});
const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
  message: 'must be one of fatal, error, warn, info, debug, trace, silent',
});
const saslMechanism = z.enum(['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'], {
  message: 'must be plain, scram-sha-256, scram-sha-512 or oauthbearer',
});
const compression = z.enum(['none', 'gzip', 'snappy', 'lz4', 'zstd'], {
  message: 'must be none, gzip, snappy, lz4 or zstd',
});

/**
 * Read by every command that reads a transport's variables (upstream, Kafka, registry): it lets
 * clear text through (config/clear-text.ts).
 */
const insecureTransportEnv = { ALLOW_INSECURE_TRANSPORT: flag.default(false) };

/** Read by the connector and the verifier: they refuse an upstream that answers as the sandbox. */
export const sandboxUpstreamEnv = { ALLOW_SANDBOX_UPSTREAM: flag.default(false) };

/** Variables of the upstream HTTP service. */
export const apiEnv = {
  ...insecureTransportEnv,
  API_BASE_URL: baseUrl,
  API_KEY: apiKey,
  API_TLS_CERT: text.optional(),
  API_TLS_KEY: text.optional(),
  API_TLS_CA: text.optional(),
  API_TIMEOUT_MS: int(100, 600_000).default(10_000),
};

/** Variables of the Kafka cluster. */
export const kafkaEnv = {
  ...insecureTransportEnv,
  KAFKA_BROKERS: brokerList,
  KAFKA_CLIENT_ID: text.default('fraudlink'),
  /** Unset: on when a KAFKA_TLS_* file is given, else off (config/index.ts). */
  KAFKA_SSL: flag.optional(),
  KAFKA_COMPRESSION: compression.default('none'),
  KAFKA_TLS_CA: text.optional(),
  KAFKA_TLS_CERT: text.optional(),
  KAFKA_TLS_KEY: text.optional(),
  KAFKA_SASL_MECHANISM: saslMechanism.optional(),
  KAFKA_SASL_USERNAME: text.optional(),
  KAFKA_SASL_PASSWORD: text.optional(),
  KAFKA_SASL_OAUTH_TOKEN_URL: httpUrl.optional(),
  KAFKA_SASL_OAUTH_CLIENT_ID: text.optional(),
  KAFKA_SASL_OAUTH_CLIENT_SECRET: text.optional(),
  KAFKA_SASL_OAUTH_SCOPE: text.optional(),
};

/** Variables of the schema registry (the Avro topics; the connector's cursor is JSON). */
export const registryEnv = {
  ...insecureTransportEnv,
  SCHEMA_REGISTRY_URL: httpUrl,
  SCHEMA_REGISTRY_USERNAME: text.optional(),
  SCHEMA_REGISTRY_PASSWORD: text.optional(),
  SCHEMA_REGISTRY_TLS_CA: text.optional(),
  SCHEMA_REGISTRY_TLS_CERT: text.optional(),
  SCHEMA_REGISTRY_TLS_KEY: text.optional(),
};

export const alertsEnv = {
  ALERTS_TOPIC: topic.default('fraud.alerts.v1'),
  ALERTS_TOPIC_PARTITIONS: int(1, 10_000).default(6),
  ALERTS_DLQ_TOPIC: topic.default('fraud.alerts.dlq.v1'),
  TOPIC_REPLICATION_FACTOR: replicationFactor.default(-1),
};

export const connectorEnv = {
  CONNECTOR_OFFSETS_TOPIC: topic.default('fraudlink.connector.offsets'),
  CONNECTOR_NAME: text
    .regex(/^[a-zA-Z0-9._-]{1,200}$/, 'must be letters, digits, ".", "_" or "-"')
    .default('fraudlink-alerts'),
  EXPORT_START: isoOrEarliest.default('earliest'),
  EXPORT_CURSOR_PARAM: cursorParam.default('cursor'),
  POLL_INTERVAL_MS: int(0, 86_400_000).default(5000),
  CONNECTOR_TX_MAX_ROWS: int(1, 1_000_000).default(5000),
  CONNECTOR_TX_MAX_MS: int(1, 600_000).default(1000),
};

/** VERIFY_DEFAULT_DEADLINE_MS when unset: the EPC scheme's budget. */
export const DEFAULT_DEADLINE_MS = 5000;

export const verifierEnv = {
  VERIFY_REQUESTS_TOPIC: topic.default('vop.verification.requests.v1'),
  VERIFY_REPLIES_TOPIC: topic.default('vop.verification.replies.v1'),
  VERIFY_DLQ_TOPIC: topic.default('vop.verification.requests.dlq.v1'),
  VERIFY_GROUP_ID: text.default('fraudlink-verifier'),
  VERIFY_DEFAULT_DEADLINE_MS: int(1, 3_600_000).default(DEFAULT_DEADLINE_MS),
  /** Unset: 15 s, or VERIFY_DEFAULT_DEADLINE_MS when that is longer (config/index.ts). */
  VERIFY_MAX_DEADLINE_MS: int(1, 3_600_000).optional(),
  VERIFY_CONCURRENCY: int(1, 10_000).default(64),
  VERIFY_REPLY_TOPICS: regex.default('^vop\\.verification\\.replies\\..*'),
  VERIFY_TOPIC_PARTITIONS: int(1, 10_000).default(6),
  VERIFY_COMMIT_INTERVAL_MS: int(0, 60_000).default(10),
};

/** TABLE_API_KEYS: comma-separated keys, each a header-safe token; empty entries are ignored. */
const apiKeyList = text.transform((v, ctx) => {
  const keys = v
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  if (keys.length === 0 || keys.some((k) => !/^[\x21-\x7e]+$/.test(k))) {
    ctx.addIssue({
      code: 'custom',
      message: 'must be a comma-separated list of keys, each printable ASCII without spaces or commas',
    });
    return z.NEVER;
  }
  return keys;
});

export const tableEnv = {
  TABLE_DB_PATH: text.default('./fraudlink-table.db'),
  TABLE_API_KEYS: apiKeyList.optional(),
};

export const commonEnv = {
  HTTP_PORT: int(0, 65_535).default(9464),
  HTTP_HOST: text.default('0.0.0.0'),
  LOG_LEVEL: logLevel.default('info'),
};

export { z };
