import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortedError, DecodeError, isRetriable, SchemaRegistryError } from '../../src/errors.ts';
import { createSchemaRegistry, REGISTRY_TIMEOUT_MS } from '../../src/kafka/registry.ts';
import { isSchemaRefusal } from '../../src/kafka/registry-errors.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { startUp } from '../../src/start-up.ts';

/**
 * A registry that accepts connections and then never answers (or answers only `partial`);
 * `connected` resolves at its first connection.
 */
async function stuckRegistry(
  partial?: string,
): Promise<{ url: string; connections: () => number; connected: Promise<unknown> }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    if (partial !== undefined) socket.once('data', () => socket.write(partial));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  servers.push({ server, sockets });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/apis/ccompat/v7`,
    connections: () => sockets.length,
    connected: once(server, 'connection'),
  };
}

const servers: { server: Server; sockets: Socket[] }[] = [];
afterEach(async () => {
  for (const { server, sockets } of servers.splice(0)) {
    for (const socket of sockets) socket.destroy();
    server.close();
    await once(server, 'close');
  }
});

const wireFormat = (schemaId: number) => Buffer.from([0, 0, 0, 0, schemaId, 2, 3]);

async function failureOf(call: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = performance.now();
  const err = await call.then(
    () => new Error('expected the call to fail'),
    (e: unknown) => e,
  );
  return { err, ms: performance.now() - started };
}

describe('schema registry client against a registry that never answers', () => {
  it('fails a decode of an uncached schema id within its timeout with a retriable SchemaRegistryError', async () => {
    const stuck = await stuckRegistry();
    const registry = createSchemaRegistry({ url: stuck.url, timeoutMs: 300 });
    const { err, ms } = await failureOf(registry.decode(wireFormat(7)));
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(true);
    expect((err as Error).message).toMatch(/^reading schema id 7 failed: .*Timeout \(300ms\)/);
    expect(ms).toBeGreaterThanOrEqual(250);
    // A timeout is not retried inside the client (the caller's retry decides), and the next decode asks again.
    expect(stuck.connections()).toBe(1);
    await failureOf(registry.decode(wireFormat(7)));
    expect(stuck.connections()).toBe(2);
  });

  it('fails a registration and an encoder within the timeout with a retriable SchemaRegistryError', async () => {
    const stuck = await stuckRegistry();
    const registry = createSchemaRegistry({ url: stuck.url, timeoutMs: 300 });
    const calls = [
      () => registry.register('alerts', loadSchema(SchemaNames.AlertUpserted)),
      () => registry.encoder('alerts', loadSchema(SchemaNames.AlertUpserted)),
    ];
    for (const [i, call] of calls.entries()) {
      const { err } = await failureOf(call());
      expect(err).toBeInstanceOf(SchemaRegistryError);
      expect(isRetriable(err)).toBe(true);
      expect((err as Error).message).toMatch(
        /^registering alerts-fraudlink.alerts.AlertUpserted failed: .*Timeout \(300ms\)/,
      );
      // Within one timeout: the request that timed out was not sent again.
      expect(stuck.connections()).toBe(i + 1);
    }
  });

  it('fails a response that stops half way within the timeout', async () => {
    const stuck = await stuckRegistry(
      'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"schema":',
    );
    const registry = createSchemaRegistry({ url: stuck.url, timeoutMs: 300 });
    const { err } = await failureOf(registry.decode(wireFormat(9)));
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(true);
    expect((err as Error).message).toMatch(/^reading schema id 9 failed: .*Timeout \(300ms\)/);
    expect(stuck.connections()).toBe(1);
  });

  it(
    'gives up by default after REGISTRY_TIMEOUT_MS rather than waiting for ever',
    async () => {
      const stuck = await stuckRegistry();
      const registry = createSchemaRegistry({ url: stuck.url });
      const { err, ms } = await failureOf(registry.decode(wireFormat(7)));
      expect(err).toBeInstanceOf(SchemaRegistryError);
      expect(isRetriable(err)).toBe(true);
      expect((err as Error).message).toContain(`Timeout (${REGISTRY_TIMEOUT_MS}ms)`);
      expect(ms).toBeGreaterThanOrEqual(REGISTRY_TIMEOUT_MS - 100);
      expect(stuck.connections()).toBe(1);
    },
    REGISTRY_TIMEOUT_MS + 5000,
  );
});

// A SIGTERM during start-up must not wait for a call the registry never answers (its 10 s timeout),
// nor for the backoff of a start-up waiting out a registry outage.
describe('a start-up step waiting out a registry outage', () => {
  it('ends at once with AbortedError when the signal aborts during a call the registry never answers', async () => {
    const stuck = await stuckRegistry();
    const registry = createSchemaRegistry({ url: stuck.url });
    const stop = new AbortController();
    const warnings: unknown[] = [];
    const registering = startUp(
      stop.signal,
      ({ outlasting }) =>
        outlasting('registering the alert schemas', 'the schema registry', () =>
          registry.register('alerts', loadSchema(SchemaNames.AlertUpserted)),
        ),
      { logger: { warn: (details: unknown) => warnings.push(details) } },
    );
    await stuck.connected;
    stop.abort(new AbortedError('SIGTERM during start-up'));
    const err = await registering.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortedError);
    expect((err as Error).cause).toBe(stop.signal.reason);
    expect(warnings).toEqual([]);
  });

  it('stops waiting its backoff when the signal aborts, trying no more', async () => {
    const stop = new AbortController();
    let attempts = 0;
    const registering = startUp(
      stop.signal,
      ({ outlasting }) =>
        outlasting('registering the alert schemas', 'the schema registry', async () => {
          attempts++;
          throw new SchemaRegistryError('registry unreachable', { retriable: true });
        }),
      // Logged as the backoff begins.
      { logger: { warn: () => stop.abort(new AbortedError('SIGTERM during start-up')) } },
    );
    await expect(registering).rejects.toBeInstanceOf(AbortedError);
    expect(attempts).toBe(1);
  });
});

describe('schema registry client over TLS', () => {
  it('fails with a retriable SchemaRegistryError when the connection drops during the TLS handshake', async () => {
    // Accepts each connection and closes it before answering the ClientHello: a registry restarting
    // behind its load balancer, say.
    const server: Server = createServer((socket) => socket.destroy());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    servers.push({ server, sockets: [] });
    const { port } = server.address() as { port: number };
    const registry = createSchemaRegistry({ url: `https://127.0.0.1:${port}/apis/ccompat/v7` });
    const { err } = await failureOf(registry.decode(wireFormat(7)));
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect((err as Error).message).toMatch(/before secure TLS connection was established/);
    expect(isRetriable(err)).toBe(true);
  });
});

/**
 * A registry answering `GET /subjects` with `subjects` (404 when null, that status when a number) and
 * 404 to everything else.
 */
async function notFoundRegistry(
  subjects: string[] | number | null,
): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  const server = createHttpServer((req, res) => {
    paths.push(req.url ?? '');
    const listing = req.url?.endsWith('/subjects') && subjects !== null;
    const status = !listing ? 404 : typeof subjects === 'number' ? subjects : 200;
    res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
    res.end(
      JSON.stringify(
        status === 200 ? subjects : { error_code: status * 100 + 3, message: `answered ${status}` },
      ),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  httpServers.push(server);
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/apis/ccompat/v7`, paths };
}

const httpServers: HttpServer[] = [];
afterEach(async () => {
  for (const server of httpServers.splice(0)) {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  }
});

describe('schema registry client on a 404', () => {
  it('reads an unknown schema id as bad data when the registry lists its subjects', async () => {
    const registry = await notFoundRegistry(['alerts-fraudlink.alerts.AlertUpserted']);
    const err = (await failureOf(createSchemaRegistry({ url: registry.url }).decode(wireFormat(7)))).err;
    expect(err).toBeInstanceOf(DecodeError);
    expect((err as Error).message).toBe('schema id 7 is unknown to the registry');
    expect(registry.paths).toEqual(['/apis/ccompat/v7/schemas/ids/7', '/apis/ccompat/v7/subjects']);
  });

  it.each([401, 403])(
    'reads an unknown schema id as bad data when the registry refuses to list its subjects (%i)',
    async (status) => {
      // Something that tells who may list subjects is a registry: its 404 for the id stands.
      const registry = await notFoundRegistry(status);
      const err = (await failureOf(createSchemaRegistry({ url: registry.url }).decode(wireFormat(7)))).err;
      expect(err).toBeInstanceOf(DecodeError);
    },
  );

  // The client asks a 503 again five times, with back-off (REGISTRY_CLIENT_RETRIES): 3-4 s, past
  // vitest's default 5 s when other test files share the cores.
  it('stops on a retriable error naming the failure when listing the subjects fails (503)', {
    timeout: 30_000,
  }, async () => {
    const registry = await notFoundRegistry(503);
    const err = (await failureOf(createSchemaRegistry({ url: registry.url }).decode(wireFormat(7)))).err;
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(true);
    expect((err as Error).message).toMatch(
      /^reading schema id 7 answered 404, and listing the registry's subjects failed: .*answered 503/,
    );
  });

  it('blames the registry URL, not the data, when the registry answers 404 to everything', async () => {
    const registry = await notFoundRegistry(null);
    const err = (await failureOf(createSchemaRegistry({ url: registry.url }).decode(wireFormat(7)))).err;
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(false);
    expect((err as Error).message).toMatch(
      /^reading schema id 7 answered 404, and so did listing the registry's subjects .*SCHEMA_REGISTRY_URL/,
    );
  });
});

/** A registry answering `GET /schemas/ids/7` with `body` as `contentType`; the paths asked, in `paths`. */
async function servingRegistry(body: string, contentType = 'application/vnd.schemaregistry.v1+json') {
  const paths: string[] = [];
  const server = createHttpServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(req.url?.endsWith('/schemas/ids/7') ? 200 : 404, { 'content-type': contentType });
    res.end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  httpServers.push(server);
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/apis/ccompat/v7`, paths };
}

describe('schema registry client on a schema it cannot read with', () => {
  it('reads a value framed with the id of an Avro schema avsc cannot build as bad data, and asks once', async () => {
    const schema = { type: 'record', name: 'Parcel', fields: [{ name: 'to', type: 'NoSuchType' }] };
    const registry = await servingRegistry(JSON.stringify({ schema: JSON.stringify(schema) }));
    const client = createSchemaRegistry({ url: registry.url });
    const err = (await failureOf(client.decode(wireFormat(7)))).err;
    expect(err).toBeInstanceOf(DecodeError);
    expect((err as Error).message).toMatch(
      /^schema id 7 is an Avro schema fraudlink cannot read: .*NoSuchType/,
    );
    const asked = registry.paths.length;
    // The schema of an id does not change: the next value framed with it is judged without asking.
    expect((await failureOf(client.decode(wireFormat(7)))).err).toBe(err);
    expect(registry.paths).toHaveLength(asked);
  });

  it('blames the registry URL, not the data, when what answers serves no schema', async () => {
    const registry = await servingRegistry('<html>a proxy page</html>', 'text/html');
    const err = (await failureOf(createSchemaRegistry({ url: registry.url }).decode(wireFormat(7)))).err;
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(false);
    expect((err as Error).message).toMatch(/^reading schema id 7 answered no schema, .*SCHEMA_REGISTRY_URL/);
  });
});

/**
 * A registry that answers a subject's config BACKWARD and every registration `status` with `body`,
 * as the registry named in the test's title answers it (Apicurio 3.3.3's answers as seen from it).
 */
async function refusingRegistry(status: number, body: { error_code: number; message: string }) {
  const server = createHttpServer((req, res) => {
    const config = req.method === 'GET' && req.url?.includes('/config/');
    req.resume();
    res.writeHead(config ? 200 : status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
    res.end(JSON.stringify(config ? { compatibilityLevel: 'BACKWARD' } : body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  httpServers.push(server);
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}/apis/ccompat/v7`;
}

describe('schema registry client on a refused registration', () => {
  const register = async (url: string) =>
    (
      await failureOf(
        createSchemaRegistry({ url }).register('replies', loadSchema(SchemaNames.VerificationResult)),
      )
    ).err;

  it.each([
    [
      "Apicurio's read-only storage",
      409,
      { error_code: 0, message: 'Unsupported write operation. Storage is in read-only mode.' },
    ],
    [
      "Confluent's READONLY mode",
      422,
      { error_code: 42205, message: 'Subject replies-fraudlink.vop.VerificationResult is in read-only mode' },
    ],
    [
      "Confluent's IMPORT mode",
      422,
      {
        error_code: 42205,
        message: 'Subject replies-fraudlink.vop.VerificationResult is not in read-write mode',
      },
    ],
  ])(
    'takes %s for a registry refusing writes for now (retriable), not for a refused schema',
    async (_, status, body) => {
      const err = await register(await refusingRegistry(status, body));
      expect(err).toBeInstanceOf(SchemaRegistryError);
      expect((err as Error).message).toContain(body.message);
      expect(isRetriable(err)).toBe(true);
      expect(isSchemaRefusal(err)).toBe(false);
    },
  );

  it.each([
    [
      'an incompatible schema (409)',
      409,
      {
        error_code: 409,
        message: 'io.apicurio.registry.rules.violation.RuleViolationException: Incompatible artifact',
      },
    ],
    [
      'an invalid schema (422)',
      422,
      { error_code: 42201, message: 'Failed to discover artifact type from content.' },
    ],
  ])('takes %s for a refused schema, final', async (_, status, body) => {
    const err = await register(await refusingRegistry(status, body));
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(false);
    expect(isSchemaRefusal(err)).toBe(true);
  });
});

describe('schema registry client caches', () => {
  it('keeps the verdicts on at most schemaIdCacheMax schema ids, the least recently read dropped first', async () => {
    const asked: string[] = [];
    // Every id is a JSON schema: not readable as Avro, a verdict the client keeps.
    const server = createHttpServer((req, res) => {
      asked.push(req.url?.split('/').pop() ?? '');
      res.writeHead(200, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
      res.end(JSON.stringify({ schema: '{}', schemaType: 'JSON' }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    httpServers.push(server);
    const { port } = server.address() as { port: number };
    const client = createSchemaRegistry({ url: `http://127.0.0.1:${port}`, schemaIdCacheMax: 2 });
    for (const id of [1, 2, 1, 3, 1, 2]) {
      expect((await failureOf(client.decode(wireFormat(id)))).err).toBeInstanceOf(DecodeError);
    }
    // 1 and 2 kept; 3 pushed 2 out (1 was read since), so 2 is asked again.
    expect(asked).toEqual(['1', '2', '3', '2']);
  });
});
