import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/logger.ts';
import { createSandbox } from '../../src/sandbox/index.ts';
import { createListener, type HandlerDeps } from '../../src/sandbox/server.ts';
import { call, exportPath, type Row, startSandbox } from './helpers.ts';

/** Writes `text` on a fresh socket and resolves with everything the server sent until it closed. */
function rawRequest(url: string, text: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('the request listener', () => {
  it('answers 400 INVALID_REQUEST to a request target that is no URL, and keeps serving', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const answer = await rawRequest(sandbox.url, 'GET //[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      code: 'INVALID_REQUEST',
      message: expect.any(String),
    });
    const next = await call(sandbox.url, exportPath({}), { key: 'sandbox-key' });
    expect(next.status).toBe(200);
  });

  it('answers 415 UNSUPPORTED_MEDIA_TYPE to a JSON body sent without Content-Type: application/json', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const bodies: [string, unknown][] = [
      ['/sharing/v1/alerts/sent/search', {}],
      ['/sharing/v1/alerts/received/search', {}],
      ['/vop/v1/verify', { iban: 'DE89370400440532013000', party: { name: 'Anna Weber' } }],
    ];
    for (const [path, body] of bodies) {
      for (const contentType of [
        null,
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/jsonx',
      ]) {
        const answer = await call(sandbox.url, path, { key: 'sandbox-key', body, contentType });
        expect({ path, contentType, ...answer }).toMatchObject({
          status: 415,
          body: { code: 'UNSUPPORTED_MEDIA_TYPE', message: expect.stringContaining('application/json') },
        });
      }
      for (const contentType of ['application/json; charset=utf-8', 'Application/JSON']) {
        const answer = await call(sandbox.url, path, { key: 'sandbox-key', body, contentType });
        expect({ path, contentType, status: answer.status }).toEqual({ path, contentType, status: 200 });
      }
    }
  });

  it('answers 415 to an admin body sent without Content-Type: application/json, and leaves the sandbox as it was', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const writes: ['PUT' | 'POST', string, unknown][] = [
      ['PUT', '/__admin/faults', { errorRate: 1 }],
      ['POST', '/__admin/changes', { count: 3 }],
      ['POST', '/__admin/malformed', { kind: 'missing-iban' }],
    ];
    const before = { faults: sandbox.faults(), rows: sandbox.currentRows() };
    for (const [method, path, body] of writes) {
      for (const contentType of [null, 'text/plain', 'application/x-www-form-urlencoded']) {
        const answer = await call(sandbox.url, path, { method, body, contentType });
        expect({ path, contentType, ...answer }).toMatchObject({
          status: 415,
          body: { code: 'UNSUPPORTED_MEDIA_TYPE', message: expect.stringContaining('application/json') },
        });
      }
    }
    expect({ faults: sandbox.faults(), rows: sandbox.currentRows() }).toEqual(before);
    for (const [method, path, body] of writes) {
      const answer = await call(sandbox.url, path, {
        method,
        body,
        contentType: 'application/json; charset=utf-8',
      });
      expect({ path, status: answer.status }).toEqual({ path, status: 200 });
    }
    expect(sandbox.faults().errorRate).toBe(1);
  });

  it('answers 405 METHOD_NOT_ALLOWED with an Allow header to a known path asked with another method', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const cases: ['GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE', string, string][] = [
      ['DELETE', exportPath({}), 'GET, HEAD'],
      ['POST', '/sharing/v1/alerts/ALR-00000001', 'GET, HEAD'],
      ['GET', '/sharing/v1/alerts/sent/search', 'POST'],
      ['PUT', '/sharing/v1/alerts/received/search', 'POST'],
      ['GET', '/vop/v1/verify', 'POST'],
      ['POST', '/__admin/faults', 'GET, HEAD, PUT'],
      ['PUT', '/__admin/requests', 'GET, HEAD, DELETE'],
      ['GET', '/__admin/changes', 'POST'],
    ];
    for (const [method, path, allow] of cases) {
      const answer = await call(sandbox.url, path, { key: 'sandbox-key', method });
      expect({ method, path, status: answer.status, allow: answer.headers.allow, body: answer.body }).toEqual(
        {
          method,
          path,
          status: 405,
          allow,
          body: { code: 'METHOD_NOT_ALLOWED', message: expect.stringContaining(allow) },
        },
      );
    }
    for (const path of [
      '/sharing/v1/alerts/ALR-00000001/reports',
      '/sharing/v2/alerts/export',
      '/__admin/nope',
    ]) {
      expect((await call(sandbox.url, path, { key: 'sandbox-key', method: 'PUT' })).status).toBe(404);
    }
  });

  it('answers HEAD on every path it serves with GET: the same status and headers, no body', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const paths = [
      exportPath({}),
      exportPath({ cursor: 'forged' }),
      '/sharing/v1/alerts/ALR-00000001',
      '/sharing/v1/alerts/ALR-99999999',
      '/__admin/faults',
      '/__admin/rows',
      '/__admin/holder?iban=DE89370400440532013000',
    ];
    for (const key of ['sandbox-key', 'wrong-key']) {
      for (const path of paths) {
        const get = await call(sandbox.url, path, { key, method: 'GET' });
        const head = await call(sandbox.url, path, { key, method: 'HEAD' });
        const seen = (a: typeof get) => ({
          path,
          key,
          status: a.status,
          type: a.headers['content-type'],
          length: a.headers['content-length'],
        });
        expect(seen(head)).toEqual(seen(get));
        expect(head.body).toBeUndefined();
      }
    }
    const heads = sandbox.requestLog().filter((r) => r.method === 'HEAD');
    expect(heads.map((r) => r.status)).toEqual([200, 400, 200, 404, 401, 401, 401, 401]);
    const verify = await call(sandbox.url, '/vop/v1/verify', { key: 'sandbox-key', method: 'HEAD' });
    expect({ status: verify.status, allow: verify.headers.allow }).toEqual({ status: 405, allow: 'POST' });
  });

  it('answers 413 PAYLOAD_TOO_LARGE to a body over 1 MiB, declared or sent chunked, and closes the connection', async () => {
    const sandbox = await startSandbox({ alerts: 5 });
    const MiB = 1 << 20;
    const post = async (path: string, body: string | (() => Readable)) => {
      const res = await request(`${sandbox.url}${path}`, {
        method: 'POST',
        headers: { 'x-api-key': 'sandbox-key', 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : body(),
      });
      const text = await res.body.text();
      return { path, status: res.statusCode, connection: res.headers.connection, body: JSON.parse(text) };
    };
    // Spaces around a JSON object: valid JSON of any size.
    const padded = (size: number) => `{}${' '.repeat(size - 2)}`;
    const chunked = (size: number) => () => Readable.from([Buffer.from('{}'), Buffer.alloc(size - 2, 32)]);
    for (const path of ['/vop/v1/verify', '/sharing/v1/alerts/sent/search', '/__admin/changes']) {
      for (const body of [padded(MiB + 1), chunked(MiB + 1), padded(4 * MiB)]) {
        expect(await post(path, body)).toEqual({
          path,
          status: 413,
          connection: 'close',
          body: { code: 'PAYLOAD_TOO_LARGE', message: 'body larger than 1 MiB' },
        });
      }
    }
    for (const body of [padded(MiB), chunked(MiB)]) {
      expect(await post('/sharing/v1/alerts/received/search', body)).toMatchObject({ status: 200 });
    }
    expect(sandbox.requestLog().map((r) => r.status)).toEqual([...Array(6).fill(413), 200, 200]);
  });

  it('logs and answers 500 when the handler itself throws, instead of leaving the rejection unhandled', async () => {
    const logged: unknown[] = [];
    const logger = { error: (obj: unknown) => logged.push(obj) } as unknown as Logger;
    const boom = new Error('clock broken');
    const deps = {
      logger,
      basePath: '',
      now: () => {
        throw boom;
      },
    } as unknown as HandlerDeps;
    const server = createServer(createListener(deps));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const answer = await call(`http://127.0.0.1:${port}`, '/anything');
    expect(answer).toEqual(
      expect.objectContaining({ status: 500, body: { code: 'INTERNAL', message: 'sandbox failure' } }),
    );
    expect(logged).toEqual([{ err: boom }]);
  });
});

describe('createSandbox options', () => {
  // Each was accepted: an empty host listened on all interfaces (the CLI refuses --host ''), and a
  // cursor named updatedAfter collided with the export's other parameter (EXPORT_CURSOR_PARAM refuses it).
  it.each([
    ['an empty host', { host: '' }, 'sandbox option host must not be empty'],
    ['a blank host', { host: '  ' }, 'sandbox option host must not be empty'],
    ['an empty cursorParam', { cursorParam: '' }, 'sandbox option cursorParam must not be empty'],
    [
      'cursorParam updatedAfter',
      { cursorParam: 'updatedAfter' },
      "sandbox option cursorParam must not be updatedAfter, the export's other parameter",
    ],
    [
      'an API key with a space',
      { apiKeys: ['tenant a'] },
      'sandbox option apiKeys must be printable ASCII without spaces (it is an HTTP header value)',
    ],
    ['an empty API key', { apiKeys: ['a', ''] }, 'sandbox option apiKeys must not be empty'],
    ['the same API key twice', { apiKeys: ['a', ' a'] }, 'sandbox API keys must be distinct'],
  ])('refuses %s with a RangeError naming the option', (_what, options, message) => {
    expect(() => createSandbox(options)).toThrow(new RangeError(message));
  });

  // A key with spaces around it matched no request (HTTP trims header values), and a cursor
  // parameter so named was ignored: they are trimmed, as API_KEY and EXPORT_CURSOR_PARAM are.
  it('trims the API keys, host and cursorParam as the configuration trims their variables', async () => {
    const sandbox = createSandbox({
      port: 0,
      host: ' 127.0.0.1 ',
      apiKeys: [' k1', 'k2 '],
      cursorParam: ' after ',
      alerts: 20,
      pageSize: 10,
      changesPerSec: 0,
    });
    const ready = await sandbox.start();
    cleanup.push(() => sandbox.stop());
    expect(ready).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:/), apiKeys: ['k1', 'k2'] });
    const first = await call(ready.url, exportPath({}), { key: 'k1' });
    expect(first.status).toBe(200);
    const { rows, nextCursor } = first.body as { rows: Row[]; nextCursor: string };
    const second = await call(ready.url, exportPath({ cursor: nextCursor }, 'after'), { key: 'k1' });
    expect((second.body as { rows: Row[] }).rows.map((r) => r.id)).not.toContain(rows[0]?.id);
    expect((await call(ready.url, exportPath({}), { key: 'k2' })).status).toBe(200);
  });
});
