import { describe, expect, it, onTestFinished } from 'vitest';
import type { KafkaOAuthConfig } from '../../src/config/index.ts';
import { KafkaAuthenticationError, KafkaError } from '../../src/errors.ts';
import { createOAuthTokenSource } from '../../src/kafka/oauth.ts';
import { createLogger } from '../../src/logger.ts';
import { sendJson, serve } from '../api/servers.ts';
import { logCapture } from '../helpers/log.ts';

const SECRET = 's3cr:t/with&odd=chars';

/** A token endpoint answering each request with `answer(attempt)`: [status, body]. */
async function tokenEndpoint(answer: (attempt: number) => [number, unknown]) {
  const server = await serve((_req, res, attempt) => {
    const [status, body] = answer(attempt);
    sendJson(res, status, body);
  });
  onTestFinished(() => server.close());
  const config: KafkaOAuthConfig = {
    tokenUrl: `${server.url}/oauth/token`,
    clientId: 'fraudlink client',
    clientSecret: SECRET,
    scope: 'kafka.read kafka.write',
  };
  return { server, config };
}

/** A clock the test moves by hand. */
function clock(start = 1_000_000) {
  const c = { now: start, read: () => c.now };
  return c;
}

const token = (n: number, expiresIn = 100) => [
  200,
  { access_token: `token-${n}`, token_type: 'Bearer', expires_in: expiresIn },
];

describe('OAuth client credentials for SASL/OAUTHBEARER', () => {
  it('asks with client credentials in basic auth and the scope in the form', async () => {
    const { server, config } = await tokenEndpoint(() => token(1) as [number, unknown]);
    const source = createOAuthTokenSource(config, createLogger({ level: 'silent' }));
    expect(await source.token()).toBe('token-1');
    const [seen] = server.requests;
    expect(seen?.method).toBe('POST');
    expect(seen?.url).toBe('/oauth/token');
    expect(seen?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(seen?.body))).toEqual({
      grant_type: 'client_credentials',
      scope: 'kafka.read kafka.write',
    });
    // RFC 6749 §2.3.1: id and secret form-encoded, then joined by ':' and base64-encoded.
    const basic = Buffer.from(seen?.headers.authorization?.replace(/^Basic /, '') ?? '', 'base64').toString();
    const [id, secret] = basic.split(':').map(decodeURIComponent);
    expect({ id, secret }).toEqual({ id: 'fraudlink client', secret: SECRET });
  });

  it('reuses a token until 80% of its lifetime, then fetches the next one', async () => {
    const { server, config } = await tokenEndpoint((n) => token(n + 1) as [number, unknown]);
    const time = clock();
    const source = createOAuthTokenSource(config, createLogger({ level: 'silent' }), time.read);
    const first = await Promise.all([source.token(), source.token(), source.token()]);
    expect(first).toEqual(['token-1', 'token-1', 'token-1']);
    expect(server.requests).toHaveLength(1);
    time.now += 79_999; // expires_in 100 s: due for refresh at 80 s
    expect(await source.token()).toBe('token-1');
    time.now += 1;
    expect(await source.token()).toBe('token-2');
    expect(server.requests).toHaveLength(2);
  });

  it('refuses a client the endpoint refuses with KafkaAuthenticationError, naming the variables, the secret never said', async () => {
    const { config } = await tokenEndpoint(() => [
      401,
      { error: 'invalid_client', error_description: 'bad client secret' },
    ]);
    const logs = logCapture();
    const source = createOAuthTokenSource(config, createLogger({ level: 'trace', destination: logs.stream }));
    const err = await source.token().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KafkaAuthenticationError);
    expect(err).toMatchObject({ retriable: false, code: 'KAFKA_AUTHENTICATION' });
    const message = (err as Error).message;
    expect(message).toContain('KAFKA_SASL_OAUTH_TOKEN_URL');
    expect(message).toContain('KAFKA_SASL_OAUTH_CLIENT_SECRET');
    expect(message).toContain('401 invalid_client: bad client secret');
    expect(message).not.toContain(SECRET);
    expect(JSON.stringify(logs.lines)).not.toContain(SECRET);
  });

  it('treats 400 (invalid_scope, unauthorized_client) as a refusal too', async () => {
    const { config } = await tokenEndpoint(() => [400, { error: 'invalid_scope' }]);
    const source = createOAuthTokenSource(config, createLogger({ level: 'silent' }));
    await expect(source.token()).rejects.toBeInstanceOf(KafkaAuthenticationError);
  });

  it('reports a failing endpoint as retriable, and keeps the current token through a failed refresh until it expires', async () => {
    const { server, config } = await tokenEndpoint((n) =>
      n === 0 ? (token(1) as [number, unknown]) : [503, { error: 'temporarily_unavailable' }],
    );
    const time = clock();
    const source = createOAuthTokenSource(config, createLogger({ level: 'silent' }), time.read);
    expect(await source.token()).toBe('token-1');
    time.now += 90_000; // due for refresh, not yet expired
    expect(await source.token()).toBe('token-1');
    expect(server.requests).toHaveLength(2);
    time.now += 10_000; // expired: nothing left to offer
    const err = await source.token().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KafkaError);
    expect(err).toMatchObject({ retriable: true });
  });

  it('refuses an answer without an access token as retriable, not as a refused client', async () => {
    const { config } = await tokenEndpoint(() => [200, { token_type: 'Bearer' }]);
    const source = createOAuthTokenSource(config, createLogger({ level: 'silent' }));
    const err = await source.token().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KafkaError);
    expect(err).toMatchObject({ retriable: true });
  });
});
