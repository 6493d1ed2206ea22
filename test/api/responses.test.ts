import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiClient, type ApiClientOptions, createApiClient } from '../../src/api/index.ts';
import {
  AbortedError,
  InvalidInputError,
  UpstreamBadResponseError,
  UpstreamClientError,
  UpstreamConnectionError,
  UpstreamRateLimitedError,
  UpstreamTimeoutError,
  UpstreamUnauthorizedError,
} from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { type SeenRequest, sendJson, serve, type TestServer } from './servers.ts';

// Purpose-built servers for the exact misbehaviours the client must survive.
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function setup(
  handler: Parameters<typeof serve>[0],
  options: Partial<ApiClientOptions> = {},
): Promise<{ server: TestServer; client: ApiClient }> {
  const server = await serve(handler);
  cleanup.push(() => server.close());
  const client = createApiClient({
    baseUrl: server.url,
    apiKey: 'secret-key-123',
    timeoutMs: 2000,
    ...options,
  });
  cleanup.push(() => client.close());
  return { server, client };
}

const fast = { initialDelayMs: 1, maxDelayMs: 5 };
const unicodeEscaped = (text: string) =>
  Array.from(text, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
const percentEncoded = (text: string) =>
  Array.from(Buffer.from(text), (byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('');
const validPage = { rows: [{ id: 'a1' }, { id: 'a2' }], nextCursor: 'c2' };

describe('request shape', () => {
  it('sends x-api-key on every call and a JSON content type with bodies', async () => {
    const { server, client } = await setup((_req, res, _n, seen) =>
      seen.url.includes('verify')
        ? sendJson(res, 200, { partyNameMatch: 'MTCH' })
        : sendJson(res, 200, { rows: [], nextCursor: null }),
    );
    await client.exportPage({});
    await client.verify({ iban: 'DE89370400440532013000', party: { name: 'Jane Doe' } });
    const [get, post] = server.requests as [SeenRequest, SeenRequest];
    expect(get.headers['x-api-key']).toBe('secret-key-123');
    expect(get.headers['content-type']).toBeUndefined();
    expect(post.headers['x-api-key']).toBe('secret-key-123');
    expect(post.headers['content-type']).toBe('application/json');
    expect(JSON.parse(post.body)).toEqual({ iban: 'DE89370400440532013000', party: { name: 'Jane Doe' } });
  });

  it('keeps the path of the base URL in front of the endpoint paths', async () => {
    const server = await serve((_req, res) => sendJson(res, 200, { rows: [], nextCursor: null }));
    cleanup.push(() => server.close());
    const client = createApiClient({ baseUrl: `${server.url}/api/`, apiKey: 'k', timeoutMs: 2000 });
    cleanup.push(() => client.close());
    await client.exportPage({ updatedAfter: '2026-01-01T00:00:00.000Z', cursor: 'a b&c' });
    expect(server.requests[0]?.url).toBe(
      '/api/sharing/v1/alerts/export?updatedAfter=2026-01-01T00%3A00%3A00.000Z&cursor=a+b%26c',
    );
  });
  it('refuses the alert ids . and .., which would name another endpoint as dot segments, sending nothing', async () => {
    const { server, client } = await setup((_req, res) => sendJson(res, 200, { id: 'x' }));
    for (const id of ['.', '..']) {
      const error = await client.getAlert(id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error).toMatchObject({ rule: 'ALERT_ID_DOT_SEGMENT', retriable: false });
    }
    expect(server.requests).toHaveLength(0);
    // Other ids with dots are path segments like any other.
    await client.getAlert('...');
    await client.getAlert('a..b');
    expect(server.requests.map((r) => r.url)).toEqual(['/sharing/v1/alerts/...', '/sharing/v1/alerts/a..b']);
  });
});

describe('bodies', () => {
  it('returns rows raw, malformed ones included, so that the caller can reject them one by one', async () => {
    const rows = [
      { id: 'a1', iban: 'DE89370400440532013000' },
      'not an object',
      null,
      { id: 7, isActive: 'yes' },
    ];
    const { client } = await setup((_req, res) => sendJson(res, 200, { rows, nextCursor: null, extra: 1 }));
    const page = await client.exportPage({});
    expect(page.rows).toEqual(rows);
    expect(page.nextCursor).toBeNull();
  });

  it('treats a missing nextCursor as caught up', async () => {
    const { client } = await setup((_req, res) => sendJson(res, 200, { rows: [] }));
    expect((await client.exportPage({})).nextCursor).toBeNull();
  });

  it('rejects a 200 whose body is not JSON with a bad-response error and does not retry it', async () => {
    const { server, client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    });
    const error = await client.exportPage({}, { retry: fast }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    expect((error as UpstreamBadResponseError).bodyExcerpt).toBe('<html>maintenance</html>');
    expect(server.requests).toHaveLength(1);
  });

  it('accepts a 200 JSON body that starts with a UTF-8 BOM, counting its bytes', async () => {
    const json = JSON.stringify(validPage);
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]));
    });
    const page = await client.exportPage({});
    expect(page.rows).toEqual(validPage.rows);
    expect(page.bytes).toBe(3 + json.length);
  });

  it.each([
    ['two BOMs', '\uFEFF\uFEFF{"partyNameMatch":"MTCH"}'],
    ['a BOM after whitespace', ' \uFEFF{"partyNameMatch":"MTCH"}'],
    ['a BOM before junk', '\uFEFF<html>maintenance</html>'],
  ])('still rejects a 200 body of %s as not JSON, without retrying it', async (_what, body) => {
    const { server, client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const error = await client
      .verify({ iban: 'DE89370400440532013000', party: { name: 'x' } }, { retry: fast })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    expect((error as Error).message).toContain('answered a body that is not JSON');
    expect(server.requests).toHaveLength(1);
  });

  it('rejects a 200 whose body is not valid UTF-8 with a bad-response error naming the byte, instead of returning U+FFFD in its place', async () => {
    // A genuine U+FFFD (EF BF BD) comes first: it is data, and the offset counts past it.
    const head = Buffer.from('{"rows":[{"id":"a1","bic":"BNPA\uFFFD');
    const body = Buffer.concat([head, Buffer.from([0xc3, 0x28]), Buffer.from('FRPP"}],"nextCursor":null}')]);
    const { server, client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const error = (await client.exportPage({}, { retry: fast }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    expect(error.message).toBe(
      `GET /sharing/v1/alerts/export answered a body that is not valid UTF-8 (at byte ${head.length}: 0xc3)`,
    );
    expect(server.requests).toHaveLength(1);
  });

  it('reads a 200 body in UTF-8, a U+FFFD that it holds as data included', async () => {
    const page = { rows: [{ id: 'a1', name: 'Jöhn Dœ \uFFFD 😀' }], nextCursor: null };
    const { client } = await setup((_req, res) => sendJson(res, 200, page));
    expect((await client.exportPage({})).rows).toEqual(page.rows);
  });

  it('masks the IBANs of an export body that is not JSON in the error', async () => {
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"rows":[{"id":"a1","iban":"FR7630006000011234567890189","reportsCount":NaN}]}');
    });
    const error = (await client.exportPage({}, { retry: fast }).catch((e: unknown) => e)) as Error & {
      bodyExcerpt: string;
    };
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    expect(error.message).not.toContain('FR7630006000011234567890189');
    expect(error.message).toContain('"iban":"FR…0189"');
    expect(error.bodyExcerpt).toContain('"iban":"FR…0189"');
  });

  it('keeps no unmasked IBAN digits in the error, its causes or its log line when JSON.parse quotes the body', async () => {
    // V8's SyntaxError message quotes the text around the fault: `..."iban":DE89370400"...`.
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"rows":[{"id":"a1","iban":DE89370400440532013000}],"nextCursor":null}');
    });
    const error = (await client.exportPage({}, { retry: fast }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    const messages: string[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) messages.push(e.message);
    let line = '';
    const destination = new Writable({
      write(chunk, _encoding, done) {
        line += String(chunk);
        done();
      },
    });
    createLogger({ destination }).error({ err: error }, 'export failed');
    for (const text of [...messages, line]) expect(text).not.toMatch(/370400|0532013000/);
    expect(line).toContain('DE…3000');
  });

  it.each([
    ['an array', []],
    ['no rows', { nextCursor: null }],
    ['rows that are not an array', { rows: {}, nextCursor: null }],
    ['a numeric cursor', { rows: [], nextCursor: 42 }],
  ])('rejects an export envelope with %s', async (_what, body) => {
    const { client } = await setup((_req, res) => sendJson(res, 200, body));
    await expect(client.exportPage({})).rejects.toBeInstanceOf(UpstreamBadResponseError);
  });

  it('rejects a verify answer with an unknown match code, naming the field', async () => {
    const { client } = await setup((_req, res) => sendJson(res, 200, { partyNameMatch: 'MAYBE' }));
    const error = await client.verify({ iban: 'x', party: { name: 'y' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    expect((error as Error).message).toContain('partyNameMatch');
  });

  it('ignores unknown fields and a null matchedName in a verify answer', async () => {
    const { client } = await setup((_req, res) =>
      sendJson(res, 200, { partyNameMatch: 'NMTC', matchedName: null, traceId: 'x' }),
    );
    expect(await client.verify({ iban: 'x', party: { name: 'y' } })).toEqual({ partyNameMatch: 'NMTC' });
  });

  it('rejects a search answer without the alerts list', async () => {
    const { client } = await setup((_req, res) =>
      sendJson(res, 200, { page: 1, totalPages: 1, totalAlerts: 0 }),
    );
    const error = await client.searchReceived({}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    expect((error as Error).message).toContain('alerts');
  });

  it('rejects a 200 body larger than maxResponseBytes as a bad response naming the limit, without retrying it', async () => {
    const limit = 4096;
    const envelope = '{"rows":[],"nextCursor":null}';
    const { server, client } = await setup(
      (_req, res, _n, seen) => {
        const size = seen.url.includes('cursor=big') ? limit + 1 : limit;
        res.writeHead(200, { 'content-type': 'application/json' });
        // Streamed in small chunks, without a Content-Length, as a runaway body would come.
        const body = Buffer.from(`${' '.repeat(size - envelope.length)}${envelope}`);
        for (let at = 0; at < body.length; at += 1000) res.write(body.subarray(at, at + 1000));
        res.end();
      },
      { maxResponseBytes: limit },
    );
    expect(await client.exportPage({ cursor: 'fits' })).toEqual({ rows: [], nextCursor: null, bytes: limit });
    const error = await client.exportPage({ cursor: 'big' }, { retry: fast }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamBadResponseError);
    expect(error).toMatchObject({ retriable: false, message: expect.stringContaining('4096-byte limit') });
    expect(server.requests).toHaveLength(2);
  });

  it('retries a 200 cut short of its Content-Length and returns only the complete page', async () => {
    const { server, client } = await setup((req, res, attempt) => {
      const body = JSON.stringify(validPage);
      if (attempt > 0) return sendJson(res, 200, validPage);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.write(body.slice(0, 10));
      setImmediate(() => req.socket.destroy());
    });
    const page = await client.exportPage({}, { retry: fast });
    expect(page).toEqual({ ...validPage, bytes: JSON.stringify(validPage).length });
    expect(server.requests).toHaveLength(2);
  });
});

describe('errors', () => {
  it('never puts the API key in an error, even when the server echoes it', async () => {
    const { client } = await setup((req, res) =>
      sendJson(res, 400, { code: 'BAD', message: `key ${req.headers['x-api-key']} is not allowed here` }),
    );
    const error = (await client.searchSent({}).catch((e: unknown) => e)) as UpstreamClientError;
    expect(error).toBeInstanceOf(UpstreamClientError);
    expect(error.message).not.toContain('secret-key-123');
    expect(error.bodyExcerpt).toContain('[redacted]');
  });

  it.each([
    ['JSON-escaped with \\/', (key: string) => key.replaceAll('/', '\\/')],
    [
      'its slash and plus as \\u002F, \\u002b',
      (key: string) => key.replace('/', '\\u002F').replace('+', '\\u002b'),
    ],
    ['every character \\u-escaped', (key: string) => unicodeEscaped(key)],
    ['percent-encoded (%2F, %2B)', (key: string) => encodeURIComponent(key)],
    [
      'percent-encoded in lower case (%2f, %2b)',
      (key: string) => encodeURIComponent(key).replace(/%../g, (e) => e.toLowerCase()),
    ],
    ['every character percent-encoded', (key: string) => percentEncoded(key)],
  ])('never puts the API key in an error when the server echoes it %s', async (_how, echo) => {
    const key = 'k3y/SECRET+abc';
    const { client } = await setup(
      (req, res) => {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(`{"message":"unknown key ${echo(String(req.headers['x-api-key']))}"}`);
      },
      { apiKey: key },
    );
    const error = (await client.exportPage({}).catch((e: unknown) => e)) as UpstreamUnauthorizedError;
    expect(error).toBeInstanceOf(UpstreamUnauthorizedError);
    expect(error.bodyExcerpt).toBe('{"message":"unknown key [redacted]"}');
    expect(error.message).toContain('[redacted]');
    expect(error.message).not.toMatch(/SECRET|abc/i);
  });

  it("leaves no part of an API key or IBAN, however echoed, unmasked when it runs across the excerpt's 512-byte cut", async () => {
    const key = 'QzK7wP2xVb9LmT4rYh8NcJ5d';
    const iban = 'DE89370400440532013000';
    const echoes: Record<string, string> = {
      key,
      'key-escaped': unicodeEscaped(key),
      'key-percent': percentEncoded(key).toLowerCase(),
      iban,
      'iban-escaped': `\\n${iban}`,
      'iban-dashed': 'DE89-3704-0044-0532-0130-00',
    };
    // Indentation collapses to one space, so whatever survives the cut fits the 200 characters shown.
    const { client } = await setup(
      (_req, res, _n, seen) => {
        const [, what, offset] = /\/([a-z-]+)-(\d+)$/.exec(seen.url) ?? [];
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(`{${' '.repeat(Number(offset) - 1)}${echoes[what!]} has no access, ${'z'.repeat(600)}}`);
      },
      { apiKey: key },
    );
    const pieces = (secret: string, n: number) =>
      Array.from({ length: secret.length - n + 1 }, (_, i) => secret.slice(i, i + n));
    for (let offset = 480; offset <= 515; offset++) {
      for (const [what, secret] of Object.entries(echoes)) {
        const n = what.startsWith('iban') ? 5 : 4;
        const error = (await client.getAlert(`${what}-${offset}`).catch((e: unknown) => e)) as Error & {
          bodyExcerpt: string;
        };
        expect(error).toBeInstanceOf(UpstreamUnauthorizedError);
        for (const piece of pieces(secret, n)) {
          expect(error.message, `${what} at byte ${offset}`).not.toContain(piece);
          expect(error.bodyExcerpt, `${what} at byte ${offset}`).not.toContain(piece);
        }
      }
    }
  });

  it.each([
    ['a JSON \\n', 'rejected:\nFR7630006000011234567890189'],
    ['a JSON \\t', 'rejected:\tFR7630006000011234567890189'],
    ['a JSON \\u escape', 'rejected:\u0007FR7630006000011234567890189'],
    ['an underscore', 'account_FR7630006000011234567890189'],
    ['an underscore after it', 'FR7630006000011234567890189_rejected'],
    ['a JSON \\n, in groups of four', 'rejected:\nFR76 3000 6000 0112 3456 7890 189'],
    ['a JSON \\n, in groups of four split by dashes', 'rejected:\nFR76-3000-6000-0112-3456-7890-189'],
  ])('masks an IBAN in an error body next to %s', async (_what, message) => {
    const { client } = await setup((_req, res) => sendJson(res, 400, { code: 'INVALID', message }));
    const error = (await client
      .verify({ iban: 'FR7630006000011234567890189', party: { name: 'x' } })
      .catch((e: unknown) => e)) as UpstreamClientError;
    expect(error).toBeInstanceOf(UpstreamClientError);
    for (const text of [error.message, error.bodyExcerpt ?? '']) {
      expect(text).toContain('FR…0189');
      expect(text.replace(/[ -]/g, '')).not.toContain('3000600001123456789');
    }
  });

  it('still reports an error status whose body is not valid UTF-8, with U+FFFD in the excerpt', async () => {
    const { client } = await setup((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(Buffer.concat([Buffer.from('{"code":"BAD'), Buffer.from([0xff]), Buffer.from('"}')]));
    });
    const error = (await client.searchSent({}).catch((e: unknown) => e)) as UpstreamClientError;
    expect(error).toBeInstanceOf(UpstreamClientError);
    expect(error.bodyExcerpt).toBe('{"code":"BAD\uFFFD"}');
  });

  it('keeps only a short excerpt of a large error body', async () => {
    const { client } = await setup((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('x'.repeat(1_000_000));
    });
    const error = (await client.getAlert('1', { retry: false }).catch((e: unknown) => e)) as Error & {
      bodyExcerpt: string;
    };
    expect(error.bodyExcerpt.length).toBeLessThanOrEqual(201);
  });

  it('reads an HTTP-date Retry-After into retryAfterMs', async () => {
    const { client } = await setup((_req, res) =>
      sendJson(
        res,
        429,
        { code: 'RATE_LIMITED' },
        { 'retry-after': new Date(Date.now() + 60_000).toUTCString() },
      ),
    );
    const error = (await client
      .exportPage({}, { retry: false })
      .catch((e: unknown) => e)) as UpstreamRateLimitedError;
    expect(error).toBeInstanceOf(UpstreamRateLimitedError);
    expect(error.retryAfterMs).toBeGreaterThan(50_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it.each([
    ['delta-seconds of 30 days', () => '2600000'],
    ['an HTTP-date 40 days away', () => new Date(Date.now() + 40 * 86_400_000).toUTCString()],
  ])('sends one request, not hundreds a second, after a Retry-After of %s', async (_what, value) => {
    const { server, client } = await setup((_req, res) =>
      sendJson(res, 429, { code: 'RATE_LIMITED' }, { 'retry-after': value() }),
    );
    const controller = new AbortController();
    const delays: number[] = [];
    const waiting = Promise.withResolvers<void>();
    const pending = client
      .exportPage(
        {},
        {
          signal: controller.signal,
          retry: { retries: Infinity },
          onRetry: (i) => {
            delays.push(i.delayMs);
            waiting.resolve();
          },
        },
      )
      .catch((e: unknown) => e);
    // The backoff is about to start: an hour (a wait of that length is shown to last the hour, on a
    // fake clock, in retry.test.ts), not a 30-day one that a timer would fire after 1 ms.
    await waiting.promise;
    controller.abort();
    expect(await pending).toBeInstanceOf(AbortedError);
    expect(server.requests).toHaveLength(1);
    expect(delays).toEqual([3_600_000]);
  });

  it('maps a refused connection to a retriable connection error', async () => {
    const server = await serve(() => {});
    const url = server.url;
    await server.close();
    const client = createApiClient({ baseUrl: url, apiKey: 'k', timeoutMs: 2000 });
    cleanup.push(() => client.close());
    const error = await client.exportPage({}, { retry: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamConnectionError);
    expect((error as Error).message).toContain('ECONNREFUSED');
    expect((error as UpstreamConnectionError).retriable).toBe(true);
  });

  it('times out a body that stops arriving', async () => {
    const { client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"rows":[');
      },
      { timeoutMs: 200 },
    );
    const error = await client.exportPage({}, { retry: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as Error).message).toContain('within 200 ms');
  });

  it('times out a body that keeps dripping a byte at a time once the attempt has run timeoutMs', async () => {
    const { server, client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"rows":[');
        // Never silent for as long as timeoutMs, so undici's idle timeouts never fire.
        const drip = setInterval(() => res.write(' '), 50);
        res.on('close', () => clearInterval(drip));
      },
      { timeoutMs: 300 },
    );
    const error = await client.exportPage({}, { retry: { retries: 1, ...fast } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    // Cut off by the attempt's own limit: undici's idle timeout would say "timed out (UND_ERR_BODY_TIMEOUT)".
    expect(error).toMatchObject({
      retriable: true,
      message: expect.stringContaining('did not finish within 300 ms, the time limit of one attempt'),
    });
    expect(server.requests).toHaveLength(2);
  });

  it('reports a cancel while a 503 body stalls as AbortedError, not as the retriable 503', async () => {
    const controller = new AbortController();
    const { server, client } = await setup((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.write('{"code":');
    });
    // The cancel comes once the client has the 503 and the first bytes of its body, which never ends.
    const onChunk = () => queueMicrotask(() => controller.abort());
    subscribe('undici:request:bodyChunkReceived', onChunk);
    cleanup.push(async () => {
      unsubscribe('undici:request:bodyChunkReceived', onChunk);
    });
    const error = await client.exportPage({}, { signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect(error).toMatchObject({ retriable: false });
    expect(server.requests).toHaveLength(1);
  });

  it('aborts a request in flight when the signal fires', async () => {
    const controller = new AbortController();
    const { server, client } = await setup(() => controller.abort());
    const error = await client.exportPage({}, { signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect(server.requests).toHaveLength(1);
  });
});
