import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { loadVerifierConfig } from '../../src/config/index.ts';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { createLogger } from '../../src/logger.ts';
import { handleRequest } from '../../src/verifier/handle.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';
import { logCapture } from '../helpers/log.ts';

const IBAN = 'DE89370400440532013000';

/** One JSON request through the handler, with an upstream that answers MTCH; returns the log lines. */
async function handledAt(level: string) {
  const out = logCapture();
  const config = loadVerifierConfig({
    KAFKA_BROKERS: 'localhost:9092',
    SCHEMA_REGISTRY_URL: 'http://localhost:8081',
    API_BASE_URL: 'http://localhost:1',
    API_KEY: 'key',
  });
  const record: IncomingRecord = {
    topic: config.verifier.requestsTopic,
    partition: 0,
    offset: '0',
    key: Buffer.from('req-1'),
    value: Buffer.from(
      JSON.stringify({
        requestId: 'req-1',
        iban: IBAN,
        partyName: 'Max Mustermann',
        requestedAt: Date.now(),
      }),
    ),
    headers: { 'content-type': Buffer.from('application/json'), kafka_correlationId: Buffer.from('c-1') },
    timestamp: Date.now(),
  };
  const records = await handleRequest(record, {
    config: config.verifier,
    api: { verify: async () => ({ partyNameMatch: 'MTCH' }) },
    registry: {} as never,
    replyEncoder: async () => Promise.reject(new Error('a JSON request gets a JSON reply')),
    partitionCount: async () => 3,
    metrics: createVerifierMetrics(new Registry()),
    logger: createLogger({ level, destination: out.stream }),
  });
  return { records, lines: out.lines };
}

describe('handleRequest logging', () => {
  it('logs each verification at debug with the IBAN masked', async () => {
    const { records, lines } = await handledAt('debug');
    expect(records).toHaveLength(1);
    const verified = lines.filter((l) => l.msg === 'verified');
    expect(verified).toEqual([
      expect.objectContaining({ requestId: 'req-1', iban: 'DE…3000', outcome: 'COMPLETED' }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(IBAN);
  });

  it('writes no line per verification at info', async () => {
    const { records, lines } = await handledAt('info');
    expect(records).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'verified')).toEqual([]);
  });
});
