import { describe, expect, it } from 'vitest';
import * as errors from '../src/errors.ts';

const {
  AbortedError,
  ConfigError,
  DecodeError,
  ErrorCodes,
  exitCodeFor,
  FencedError,
  findError,
  FraudlinkError,
  InvalidInputError,
  isRetriable,
  KafkaAuthenticationError,
  KafkaError,
  KafkaTlsError,
  MemberFencedError,
  OutputError,
  SchemaRegistryError,
  StackError,
  TimeoutError,
  TopicConfigMismatchError,
  UpstreamBadResponseError,
  UpstreamClientError,
  UpstreamConnectionError,
  UpstreamNotFoundError,
  UpstreamRateLimitedError,
  UpstreamTimeoutError,
  UpstreamUnauthorizedError,
  UpstreamUnavailableError,
  UsageError,
} = errors;

const samples: [errors.FraudlinkError, string, boolean][] = [
  [new ConfigError([{ variable: 'API_KEY', message: 'is required' }]), 'CONFIG_INVALID', false],
  [new UsageError('bad flag'), 'USAGE', false],
  [new UpstreamUnauthorizedError('401'), 'UPSTREAM_UNAUTHORIZED', false],
  [new UpstreamRateLimitedError('429'), 'UPSTREAM_RATE_LIMITED', true],
  [new UpstreamUnavailableError('503'), 'UPSTREAM_UNAVAILABLE', true],
  [new UpstreamClientError('400'), 'UPSTREAM_CLIENT_ERROR', false],
  [new UpstreamNotFoundError('404'), 'UPSTREAM_NOT_FOUND', false],
  [new UpstreamBadResponseError('not json'), 'UPSTREAM_BAD_RESPONSE', false],
  [new UpstreamTimeoutError('slow'), 'UPSTREAM_TIMEOUT', true],
  [new UpstreamConnectionError('reset'), 'UPSTREAM_CONNECTION', true],
  [new KafkaError('broker down', { retriable: true }), 'KAFKA', true],
  [new FencedError('fenced'), 'KAFKA_FENCED', false],
  [new MemberFencedError('member cut off'), 'KAFKA_MEMBER_FENCED', false],
  [new KafkaAuthenticationError('SASL refused', ['KAFKA_SASL_PASSWORD']), 'KAFKA_AUTHENTICATION', false],
  [new KafkaTlsError('untrusted broker certificate'), 'KAFKA_TLS', false],
  [
    new TopicConfigMismatchError('t', [{ setting: 'cleanup.policy', expected: 'compact', actual: 'delete' }]),
    'TOPIC_CONFIG_MISMATCH',
    false,
  ],
  [new SchemaRegistryError('refused'), 'SCHEMA_REGISTRY', false],
  [new DecodeError('bad magic byte'), 'DECODE_FAILED', false],
  [new InvalidInputError('IBAN_INVALID', 'bad iban'), 'INVALID_INPUT', false],
  [new TimeoutError('no reply'), 'TIMEOUT', true],
  [new AbortedError(), 'ABORTED', false],
  [new StackError('no java'), 'STACK', false],
  [new OutputError('disk full'), 'OUTPUT_FAILED', false],
];

describe('error model', () => {
  it('covers every code of the closed list exactly once in the samples', () => {
    expect(new Set(samples.map(([, code]) => code))).toEqual(new Set(Object.values(ErrorCodes)));
  });

  for (const [error, code, retriable] of samples) {
    it(`${error.constructor.name} has code ${code}, its own name and retriable=${retriable}`, () => {
      expect(error).toBeInstanceOf(FraudlinkError);
      expect(error).toBeInstanceOf(Error);
      expect(error.code).toBe(code);
      expect(error.name).toBe(error.constructor.name);
      expect(error.retriable).toBe(retriable);
      expect(isRetriable(error)).toBe(retriable);
    });
  }

  it('keeps the cause and finds a coded error anywhere in the cause chain', () => {
    const root = new FencedError('epoch bumped');
    const wrapped = new Error('publish failed', { cause: root });
    expect(wrapped.cause).toBe(root);
    expect(findError(wrapped, 'KAFKA_FENCED')).toBe(root);
    expect(findError(wrapped, 'USAGE')).toBeUndefined();
  });

  it('judges retriability by the first coded error in the chain and never retries programmer errors', () => {
    expect(isRetriable(new Error('outer', { cause: new UpstreamUnavailableError('503') }))).toBe(true);
    expect(isRetriable(new TypeError('x is undefined'))).toBe(false);
    expect(isRetriable(new Error('plain'))).toBe(false);
    expect(isRetriable({ retriable: true })).toBe(true);
  });

  it('maps errors to the exit codes of SPEC §4', () => {
    expect(exitCodeFor(new UsageError('x'))).toBe(2);
    expect(exitCodeFor(new ConfigError([]))).toBe(2);
    expect(exitCodeFor(new Error('wrap', { cause: new UpstreamUnauthorizedError('403') }))).toBe(3);
    expect(exitCodeFor(new FencedError('x'))).toBe(4);
    // Kafka refusing the credentials stops a service as the upstream's refusal does; a broker
    // certificate that cannot be verified is a setting to fix.
    expect(exitCodeFor(new Error('wrap', { cause: new KafkaAuthenticationError('x', []) }))).toBe(3);
    expect(exitCodeFor(new KafkaTlsError('x'))).toBe(2);
    // A member cut off from its group is handled where it happens; one that escapes is a failure.
    expect(exitCodeFor(new MemberFencedError('x'))).toBe(1);
    expect(exitCodeFor(new Error('boom'))).toBe(1);
  });

  it('names every difference of a mismatched topic in the message', () => {
    const err = new TopicConfigMismatchError('fraud.alerts.v1', [
      { setting: 'cleanup.policy', expected: 'compact', actual: 'delete' },
      { setting: 'partitions', expected: '1', actual: '3' },
    ]);
    expect(err.message).toContain('cleanup.policy is delete, expected compact');
    expect(err.message).toContain('partitions is 3, expected 1');
  });
});
