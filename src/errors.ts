/**
 * The one error model of fraudlink. Every error the project raises is a FraudlinkError with a code
 * from the closed list below and a `retriable` flag; callers branch on `code`, never on message text.
 */

export const ErrorCodes = {
  CONFIG_INVALID: 'CONFIG_INVALID',
  USAGE: 'USAGE',
  UPSTREAM_UNAUTHORIZED: 'UPSTREAM_UNAUTHORIZED',
  UPSTREAM_RATE_LIMITED: 'UPSTREAM_RATE_LIMITED',
  UPSTREAM_UNAVAILABLE: 'UPSTREAM_UNAVAILABLE',
  UPSTREAM_CLIENT_ERROR: 'UPSTREAM_CLIENT_ERROR',
  UPSTREAM_NOT_FOUND: 'UPSTREAM_NOT_FOUND',
  UPSTREAM_BAD_RESPONSE: 'UPSTREAM_BAD_RESPONSE',
  UPSTREAM_TIMEOUT: 'UPSTREAM_TIMEOUT',
  UPSTREAM_CONNECTION: 'UPSTREAM_CONNECTION',
  KAFKA: 'KAFKA',
  KAFKA_FENCED: 'KAFKA_FENCED',
  KAFKA_MEMBER_FENCED: 'KAFKA_MEMBER_FENCED',
  KAFKA_AUTHENTICATION: 'KAFKA_AUTHENTICATION',
  KAFKA_TLS: 'KAFKA_TLS',
  TOPIC_CONFIG_MISMATCH: 'TOPIC_CONFIG_MISMATCH',
  SCHEMA_REGISTRY: 'SCHEMA_REGISTRY',
  DECODE_FAILED: 'DECODE_FAILED',
  INVALID_INPUT: 'INVALID_INPUT',
  TIMEOUT: 'TIMEOUT',
  ABORTED: 'ABORTED',
  STACK: 'STACK',
  OUTPUT_FAILED: 'OUTPUT_FAILED',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export interface FraudlinkErrorOptions {
  cause?: unknown;
  retriable?: boolean;
}

export abstract class FraudlinkError extends Error {
  abstract readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(message: string, options: FraudlinkErrorOptions & { retriable: boolean }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retriable = options.retriable;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

/** One or more environment variables are missing or invalid; `problems` names each one. */
export class ConfigError extends FraudlinkError {
  readonly code = ErrorCodes.CONFIG_INVALID;
  readonly problems: readonly { variable: string; message: string }[];
  constructor(problems: readonly { variable: string; message: string }[]) {
    super(`invalid configuration: ${problems.map((p) => `${p.variable}: ${p.message}`).join('; ')}`, {
      retriable: false,
    });
    this.problems = problems;
  }
}

/**
 * The upstream answered with the sandbox's mark (`x-fraudlink-sandbox: 1`) to a component that does
 * not take the sandbox (ALLOW_SANDBOX_UPSTREAM unset): API_BASE_URL names the sandbox, whose
 * synthetic alerts and names must never reach production topics. A configuration error (exit 2).
 */
export class SandboxUpstreamError extends ConfigError {
  constructor(baseUrl: string) {
    super([
      {
        variable: 'API_BASE_URL',
        message:
          `${baseUrl} answers as the fraudlink sandbox (x-fraudlink-sandbox: 1), not the real service; ` +
          'set ALLOW_SANDBOX_UPSTREAM=true to use the sandbox',
      },
    ]);
  }
}

/** A command-line argument is missing or invalid. */
export class UsageError extends FraudlinkError {
  readonly code = ErrorCodes.USAGE;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { ...options, retriable: false });
  }
}

export interface UpstreamErrorDetails {
  status?: number;
  method?: string;
  path?: string;
  /** A short excerpt of the response body, for diagnosis. */
  bodyExcerpt?: string;
  /** Parsed `Retry-After`, in milliseconds. */
  retryAfterMs?: number;
}

abstract class UpstreamErrorBase extends FraudlinkError {
  readonly status: number | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly bodyExcerpt: string | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(message: string, retriable: boolean, details: UpstreamErrorDetails, cause?: unknown) {
    super(message, { retriable, cause });
    this.status = details.status;
    this.method = details.method;
    this.path = details.path;
    this.bodyExcerpt = details.bodyExcerpt;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** 401/403: the upstream refused the credentials. */
export class UpstreamUnauthorizedError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_UNAUTHORIZED;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, false, details, cause);
  }
}

/** 429: the per-tenant rate limit; `retryAfterMs` carries the server's hint. */
export class UpstreamRateLimitedError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_RATE_LIMITED;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, true, details, cause);
  }
}

/** 5xx: upstream trouble. */
export class UpstreamUnavailableError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_UNAVAILABLE;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, true, details, cause);
  }
}

/** 400 and other 4xx the caller caused. */
export class UpstreamClientError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_CLIENT_ERROR;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, false, details, cause);
  }
}

/** 404. */
export class UpstreamNotFoundError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_NOT_FOUND;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, false, details, cause);
  }
}

/** A 2xx whose body is not JSON or breaks the expected shape. Never half-read. */
export class UpstreamBadResponseError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_BAD_RESPONSE;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, false, details, cause);
  }
}

/** Connect, headers or body timeout. */
export class UpstreamTimeoutError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_TIMEOUT;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, true, details, cause);
  }
}

/** Socket-level failure: refused, reset, closed mid-response. */
export class UpstreamConnectionError extends UpstreamErrorBase {
  readonly code = ErrorCodes.UPSTREAM_CONNECTION;
  constructor(message: string, details: UpstreamErrorDetails = {}, cause?: unknown) {
    super(message, true, details, cause);
  }
}

export type UpstreamError =
  | UpstreamUnauthorizedError
  | UpstreamRateLimitedError
  | UpstreamUnavailableError
  | UpstreamClientError
  | UpstreamNotFoundError
  | UpstreamBadResponseError
  | UpstreamTimeoutError
  | UpstreamConnectionError;

/** A Kafka operation failed; `retriable` follows the broker's verdict. */
export class KafkaError extends FraudlinkError {
  readonly code = ErrorCodes.KAFKA;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: options.retriable ?? false, cause: options.cause });
  }
}

/** Another producer with the same transactional id took over: this instance must stop publishing. */
export class FencedError extends FraudlinkError {
  readonly code = ErrorCodes.KAFKA_FENCED;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/**
 * Kafka refused fraudlink's credentials: the broker its SASL username and password, OAuth token or
 * TLS client certificate, or the OAuth token endpoint its client id and secret. `variables` names
 * the settings to check. No retry changes the answer: the service stops.
 */
export class KafkaAuthenticationError extends FraudlinkError {
  readonly code = ErrorCodes.KAFKA_AUTHENTICATION;
  readonly variables: readonly string[];
  constructor(message: string, variables: readonly string[], options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
    this.variables = variables;
  }
}

/**
 * The broker's TLS certificate failed verification (a CA fraudlink does not trust, a host name the
 * certificate does not name, an expired certificate), or the broker does not speak TLS there: a
 * setting to fix (KAFKA_TLS_CA, KAFKA_BROKERS, KAFKA_SSL), never retried.
 */
export class KafkaTlsError extends FraudlinkError {
  readonly code = ErrorCodes.KAFKA_TLS;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/**
 * The group coordinator refused a transaction's consumer offsets: the consuming member is no longer
 * in the group's current generation (KIP-447), cut off (its session expired during a long pause)
 * while its partitions went to other members. The transaction is aborted; the member must drop what
 * it has in hand, which the partitions' new owners answer, and rejoin.
 */
export class MemberFencedError extends FraudlinkError {
  readonly code = ErrorCodes.KAFKA_MEMBER_FENCED;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/** An existing topic's configuration differs from what fraudlink requires. */
export class TopicConfigMismatchError extends FraudlinkError {
  readonly code = ErrorCodes.TOPIC_CONFIG_MISMATCH;
  readonly topic: string;
  readonly differences: readonly { setting: string; expected: string; actual: string }[];
  constructor(topic: string, differences: readonly { setting: string; expected: string; actual: string }[]) {
    super(
      `topic ${topic} exists with different settings: ${differences
        .map((d) => `${d.setting} is ${d.actual}, expected ${d.expected}`)
        .join('; ')}`,
      { retriable: false },
    );
    this.topic = topic;
    this.differences = differences;
  }
}

/** The schema registry refused or failed a call. */
export class SchemaRegistryError extends FraudlinkError {
  readonly code = ErrorCodes.SCHEMA_REGISTRY;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: options.retriable ?? false, cause: options.cause });
  }
}

/** Bytes that cannot be decoded (wire format, Avro, JSON). */
export class DecodeError extends FraudlinkError {
  readonly code = ErrorCodes.DECODE_FAILED;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/**
 * A record batch that could not be read (it did not decompress, or would decompress past the
 * reader's bound): its records, `firstOffset` to `lastOffset` of `topic`/`partition`, are unknown.
 */
export class UnreadableBatchError extends DecodeError {
  readonly topic: string;
  readonly partition: number;
  readonly firstOffset: string;
  readonly lastOffset: string;
  readonly codec: string;
  constructor(batch: {
    topic: string;
    partition: number;
    firstOffset: string;
    lastOffset: string;
    codec: string;
    reason: string;
  }) {
    super(
      `${batch.topic} partition ${batch.partition} offsets ${batch.firstOffset} to ${batch.lastOffset}: ` +
        `a ${batch.codec} record batch that cannot be read (${batch.reason})`,
    );
    this.topic = batch.topic;
    this.partition = batch.partition;
    this.firstOffset = batch.firstOffset;
    this.lastOffset = batch.lastOffset;
    this.codec = batch.codec;
  }
}

/** A value (feed row, request, argument) that breaks a rule; `rule` is a stable code naming it. */
export class InvalidInputError extends FraudlinkError {
  readonly code = ErrorCodes.INVALID_INPUT;
  readonly rule: string;
  constructor(rule: string, message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
    this.rule = rule;
  }
}

/** An awaited result did not arrive in time. */
export class TimeoutError extends FraudlinkError {
  readonly code = ErrorCodes.TIMEOUT;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: options.retriable ?? true, cause: options.cause });
  }
}

/** The operation was cancelled through an AbortSignal. */
export class AbortedError extends FraudlinkError {
  readonly code = ErrorCodes.ABORTED;
  constructor(message = 'operation aborted', options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/** The local Kafka + registry stack could not be installed, started or stopped. */
export class StackError extends FraudlinkError {
  readonly code = ErrorCodes.STACK;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/** A command could not write its output (a file it cannot create, a full disk). */
export class OutputError extends FraudlinkError {
  readonly code = ErrorCodes.OUTPUT_FAILED;
  constructor(message: string, options: FraudlinkErrorOptions = {}) {
    super(message, { retriable: false, cause: options.cause });
  }
}

/** Errors that reveal a bug in our code: never retried. */
export function isProgrammerError(err: unknown): boolean {
  return (
    err instanceof TypeError ||
    err instanceof RangeError ||
    err instanceof ReferenceError ||
    err instanceof SyntaxError
  );
}

/**
 * True when some error in the cause chain is marked retriable and none is a programmer error or a
 * non-retriable FraudlinkError met before it.
 */
export function isRetriable(err: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = err;
  while (current !== undefined && current !== null && !seen.has(current)) {
    seen.add(current);
    if (isProgrammerError(current)) return false;
    if (current instanceof FraudlinkError) return current.retriable;
    if (typeof current === 'object' && 'retriable' in current && typeof current.retriable === 'boolean') {
      return current.retriable;
    }
    current = current instanceof Error ? current.cause : undefined;
  }
  return false;
}

/** Finds the first FraudlinkError of the given code in the cause chain. */
export function findError<C extends ErrorCode>(
  err: unknown,
  code: C,
): Extract<FraudlinkError, { code: C }> | undefined {
  const seen = new Set<unknown>();
  let current: unknown = err;
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    if (current instanceof FraudlinkError && current.code === code) {
      return current as Extract<FraudlinkError, { code: C }>;
    }
    current = current.cause;
  }
  return undefined;
}

/** Exit codes of every long-running command (SPEC §4). */
export const ExitCodes = {
  OK: 0,
  FAILURE: 1,
  USAGE: 2,
  /** The upstream (401/403) or Kafka (SASL, OAuth, client certificate) refused the credentials. */
  UNAUTHORIZED: 3,
  FENCED: 4,
  // Only `fraudlink api`, a one-shot command, uses these (long-running commands keep 0-4):
  /** The upstream refused the request itself (400, 404, other 4xx). */
  UPSTREAM_REJECTED: 5,
  /** The upstream stayed unavailable through the retries (5xx, 429, timeout, connection). */
  UPSTREAM_UNAVAILABLE: 6,
  /** The upstream answered 2xx with a body that is not the expected JSON. */
  UPSTREAM_BAD_RESPONSE: 7,
} as const;

export function exitCodeFor(err: unknown): number {
  if (findError(err, ErrorCodes.USAGE) || findError(err, ErrorCodes.CONFIG_INVALID)) return ExitCodes.USAGE;
  // A broker certificate fraudlink cannot verify is a setting to fix, as an invalid variable is.
  if (findError(err, ErrorCodes.KAFKA_TLS)) return ExitCodes.USAGE;
  if (findError(err, ErrorCodes.UPSTREAM_UNAUTHORIZED)) return ExitCodes.UNAUTHORIZED;
  if (findError(err, ErrorCodes.KAFKA_AUTHENTICATION)) return ExitCodes.UNAUTHORIZED;
  if (findError(err, ErrorCodes.KAFKA_FENCED)) return ExitCodes.FENCED;
  return ExitCodes.FAILURE;
}
