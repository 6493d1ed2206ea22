import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  ConfigError,
  KafkaAuthenticationError,
  KafkaError,
  KafkaTlsError,
  SchemaRegistryError,
  TopicConfigMismatchError,
} from '../src/errors.ts';
import { START_UP_RETRY_MESSAGE, type StartUpDependency, startUp } from '../src/start-up.ts';

/** Backoff of a millisecond: the attempts, not the waits, are what these tests look at. */
const QUICK = { retries: Number.POSITIVE_INFINITY, initialDelayMs: 1, maxDelayMs: 1, factor: 2, jitter: 0 };

/** A step failing `failures` times with `error` before it succeeds, and what start-up logged and said. */
async function stepFailing(failures: number, error: () => Error, dependency: StartUpDependency) {
  const warnings: { details: Record<string, unknown>; msg: string }[] = [];
  const readiness: unknown[] = [];
  let attempts = 0;
  const started = await startUp(
    undefined,
    async ({ outlasting, readiness: starting }) => {
      readiness.push(starting());
      const value = await outlasting('connecting to the dependency', dependency, async () => {
        attempts++;
        if (attempts > 1) readiness.push(starting());
        if (attempts <= failures) throw error();
        return 'connected';
      });
      readiness.push(starting());
      return value;
    },
    {
      logger: { warn: (details: Record<string, unknown>, msg: string) => warnings.push({ details, msg }) },
      outagePolicy: QUICK,
    },
  );
  return { started, attempts, warnings, readiness };
}

describe('startUp', () => {
  it('ends a step that never settles as soon as the signal aborts, having released what was created, latest first', async () => {
    const stop = new AbortController();
    const released: string[] = [];
    const release = async (what: string) => {
      released.push(what);
    };
    const joining = Promise.withResolvers<void>();
    const starting = startUp(stop.signal, async ({ step, created }) => {
      created('admin client', release);
      created('ops server', release);
      joining.resolve();
      await step('joining the group', new Promise<never>(() => {}));
      return 'started';
    });
    await joining.promise;
    const reason = new AbortedError('SIGTERM during start-up');
    stop.abort(reason);
    const err = await starting.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortedError);
    expect((err as Error).message).toBe('joining the group aborted');
    expect((err as Error).cause).toBe(reason);
    expect(released).toEqual(['ops server', 'admin client']);
  });

  it('rejects with a failed step, not with a release that fails as well, having tried every release', async () => {
    const failure = new Error('topic config mismatch');
    const released: string[] = [];
    const starting = startUp(undefined, async ({ step, created }) => {
      created('admin client', async (what) => {
        released.push(what);
      });
      created('api client', async () => {
        throw new Error('already closed');
      });
      await step('provisioning the topics', Promise.reject(failure));
    });
    await expect(starting).rejects.toBe(failure);
    expect(released).toEqual(['admin client']);
  });

  it('releases nothing of a start-up that finished', async () => {
    const released: string[] = [];
    const started = await startUp(new AbortController().signal, async ({ step, created }) => {
      const admin = created('admin client', async (what) => {
        released.push(what);
      });
      return step('provisioning the topics', Promise.resolve(admin));
    });
    expect(started).toBe('admin client');
    expect(released).toEqual([]);
  });

  it('waits out an outage that outlasts any fixed number of retries, logging each retry and reporting it as not ready', async () => {
    const unreachable = () =>
      new KafkaError('connect admin: Connection error: ECONNREFUSED', { retriable: true });
    const { started, attempts, warnings, readiness } = await stepFailing(12, unreachable, 'Kafka');
    expect(started).toBe('connected');
    expect(attempts).toBe(13);
    expect(warnings).toHaveLength(12);
    expect(warnings[0]?.msg).toBe(START_UP_RETRY_MESSAGE);
    expect(warnings[11]?.details).toMatchObject({
      step: 'connecting to the dependency',
      waitingFor: 'Kafka',
      retries: 12,
    });
    expect(String(warnings[0]?.details.err)).toContain('ECONNREFUSED');
    expect(readiness[0]).toEqual({ ready: false, reason: 'starting' });
    expect(readiness[1]).toEqual({ ready: false, reason: 'starting: waiting for Kafka' });
    expect(readiness.at(-1)).toEqual({ ready: false, reason: 'starting' });
  });

  it('says it waits for the schema registry while the registry is away', async () => {
    const away = () => new SchemaRegistryError('registry unreachable', { retriable: true });
    const { readiness } = await stepFailing(7, away, 'the schema registry');
    expect(readiness[1]).toEqual({ ready: false, reason: 'starting: waiting for the schema registry' });
  });

  it.each([
    [
      'a configuration error',
      () => new ConfigError([{ variable: 'KAFKA_BROKERS', message: 'not a host:port list' }]),
    ],
    [
      'refused Kafka credentials',
      () => new KafkaAuthenticationError('SASL refused', ['KAFKA_SASL_PASSWORD']),
    ],
    ['refused TLS settings', () => new KafkaTlsError('certificate refused')],
    [
      'a topic config mismatch',
      () =>
        new TopicConfigMismatchError('alerts', [
          { setting: 'cleanup.policy', expected: 'compact', actual: 'delete' },
        ]),
    ],
    [
      'the registry refusing the account (401)',
      () =>
        new SchemaRegistryError('unauthorized', {
          retriable: true,
          cause: Object.assign(new Error('401'), { status: 401 }),
        }),
    ],
    [
      'an authorization refused on our topic',
      () =>
        new KafkaError('provision: not authorized', {
          retriable: true,
          cause: Object.assign(new Error('Not authorized'), { type: 'TOPIC_AUTHORIZATION_FAILED' }),
        }),
    ],
  ])('fails at once on %s, which is no outage', async (_what, error) => {
    const failure = error();
    const starting = stepFailing(5, () => failure, 'Kafka');
    await expect(starting).rejects.toBe(failure);
  });
});
