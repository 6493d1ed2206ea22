import { Registry } from 'prom-client';
import type { VerifierConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/logger.ts';
import type { HandlerDeps } from '../../src/verifier/handle.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';

/**
 * Handler dependencies for unit tests: an upstream, a registry and reply encoders that are never
 * called, reply topics of 3 partitions, a DLQ taking Kafka's default largest record (1 MiB + 12).
 */
export function testHandlerDeps(
  config: VerifierConfig['verifier'],
  overrides: Partial<HandlerDeps> = {},
): HandlerDeps {
  return {
    config,
    api: {} as never,
    registry: {} as never,
    replyEncoder: async () => Promise.reject(new Error('not used')),
    partitionCount: async () => 3,
    dlqMaxBytes: 1_048_588,
    metrics: createVerifierMetrics(new Registry()),
    logger: silentLogger(),
    ...overrides,
  };
}
