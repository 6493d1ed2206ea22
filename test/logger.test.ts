import kafkajs from '@fraudlink/kafkajs';
import { describe, expect, it } from 'vitest';
import { pinoLogCreator } from '../src/kafka/logging.ts';
import { clip, createLogger, LOG_CLIP_CHARS, maskIban } from '../src/logger.ts';
import { logCapture } from './helpers/log.ts';

describe('logger', () => {
  it('writes JSON lines with the component of a child logger', () => {
    const out = logCapture();
    const root = createLogger({ destination: out.stream });
    root.child({ component: 'connector' }).info({ page: { rows: 3 } }, 'page published');
    const [line] = out.lines;
    expect(line).toMatchObject({
      level: 'info',
      component: 'connector',
      msg: 'page published',
      page: { rows: 3 },
    });
  });

  it('redacts every secret it could be handed', () => {
    const out = logCapture();
    const root = createLogger({ destination: out.stream });
    root.info(
      {
        config: { api: { key: 'k-123', baseUrl: 'http://x' }, kafka: { sasl: { password: 'p-456' } } },
        request: { headers: { 'x-api-key': 'k-789' } },
        env: { API_KEY: 'k-000', KAFKA_SASL_PASSWORD: 'p-111', KAFKA_SASL_OAUTH_CLIENT_SECRET: 'o-222' },
      },
      'starting',
    );
    // The OAuth client secret where KafkaConfig holds it, under a config object or a component's.
    root.info({ kafka: { sasl: { clientSecret: 'o-333' } } }, 'kafka');
    root.info({ config: { kafka: { sasl: { clientSecret: 'o-444' } } } }, 'config');
    const text = JSON.stringify(out.lines);
    for (const secret of ['k-123', 'p-456', 'k-789', 'k-000', 'p-111', 'o-222', 'o-333', 'o-444']) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('http://x');
  });

  it('redacts the upstream API key under apiKey, at any depth an options object puts it', () => {
    const out = logCapture();
    const root = createLogger({ destination: out.stream });
    root.info({ apiKey: 'k-1', options: { apiKey: 'k-2' }, worker: { api: { apiKey: 'k-3' } } }, 'client');
    // An all-digit key is still a secret, as a string or given as a number from code (past the
    // int16 range of kafkajs's request types), also where kafkajs puts its request type.
    root.info({ options: { apiKey: '12345' } }, 'client');
    root.info(
      { apiKey: 987654321, options: { apiKey: 20251124 }, worker: { api: { apiKey: 32768 } } },
      'client',
    );
    root.info({ kafkajs: { apiKey: 2718281828 }, err: { apiKey: 'k-4' } }, 'client');
    const text = JSON.stringify(out.lines);
    for (const secret of [
      'k-1',
      'k-2',
      'k-3',
      'k-4',
      '12345',
      '987654321',
      '20251124',
      '32768',
      '2718281828',
    ])
      expect(text).not.toContain(secret);
    expect(out.lines[0]).toMatchObject({ apiKey: '[redacted]', options: { apiKey: '[redacted]' } });
  });

  it("keeps kafkajs's protocol apiKey, a request type number, readable in its debug logs and errors", () => {
    const out = logCapture();
    const root = createLogger({ level: 'trace', destination: out.stream });
    pinoLogCreator(root)(kafkajs.logLevel.DEBUG)({
      namespace: 'Connection',
      level: kafkajs.logLevel.DEBUG,
      label: 'DEBUG',
      log: {
        message: 'Request Produce(key: 0, version: 7)',
        timestamp: 'now',
        logger: 'kafkajs',
        apiKey: 0,
        apiName: 'Produce',
        apiVersion: 7,
      },
    });
    const err = new kafkajs.KafkaJSServerDoesNotSupportApiKey('not supported', {
      apiKey: 61,
      apiName: 'DescribeProducers',
    });
    root.error({ err }, 'admin call failed');
    expect(out.lines[0]).toMatchObject({ kafkajs: { apiKey: 0, apiName: 'Produce' } });
    expect(out.lines[1]).toMatchObject({ err: { apiKey: 61, apiName: 'DescribeProducers' } });
  });

  it('logs errors under err with their code', () => {
    const out = logCapture();
    const root = createLogger({ destination: out.stream });
    const err = Object.assign(new Error('boom'), { code: 'KAFKA' });
    root.error({ err }, 'failed');
    expect(out.lines[0]).toMatchObject({ err: { message: 'boom', code: 'KAFKA' } });
  });
});

describe('maskIban', () => {
  it('keeps only the country code and the last four characters', () => {
    expect(maskIban('FR76 3000 6000 0112 3456 7890 189')).toBe('FR…0189');
    expect(maskIban('de89370400440532013000')).toBe('DE…3000');
    expect(maskIban('FR76-3000-6000-0112-3456-7890-189')).toBe('FR…0189');
  });

  it('copes with missing or very short values', () => {
    expect(maskIban(undefined)).toBe('<none>');
    expect(maskIban('FR12')).toBe('FR…');
  });
});

describe('clip', () => {
  it('keeps a short string whole and cuts a long one, saying how much it left out', () => {
    expect(clip('r-1')).toBe('r-1');
    expect(clip('x'.repeat(LOG_CLIP_CHARS))).toBe('x'.repeat(LOG_CLIP_CHARS));
    expect(clip('x'.repeat(400_000))).toBe(
      `${'x'.repeat(LOG_CLIP_CHARS)}…(${400_000 - LOG_CLIP_CHARS} more)`,
    );
    expect(clip('abcdef', 2)).toBe('ab…(4 more)');
  });
});
