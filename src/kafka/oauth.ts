import { request } from 'undici';
import type { KafkaOAuthConfig } from '../config/index.ts';
import { KafkaAuthenticationError, KafkaError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** A token is fetched again once this share of its lifetime (`expires_in`) has passed. */
export const REFRESH_AT_SHARE = 0.8;
/** The lifetime assumed for a token whose answer gives no `expires_in`. */
const DEFAULT_LIFETIME_S = 60;
const TOKEN_TIMEOUT_MS = 10_000;
/** At most this much of a refusing answer's body goes into the error (the endpoint's own words). */
const MAX_EXCERPT = 200;

interface Token {
  value: string;
  /** When it is to be replaced (REFRESH_AT_SHARE of its lifetime). */
  refreshAt: number;
  /** When it expires: until then it is still offered should a refresh fail. */
  expiresAt: number;
}

export interface OAuthTokenSource {
  /** A valid access token: the cached one, or a new one from the token endpoint. */
  token(): Promise<string>;
}

function refusal(status: number, body: string): KafkaAuthenticationError {
  let reason = body.slice(0, MAX_EXCERPT);
  try {
    const parsed = JSON.parse(body) as { error?: unknown; error_description?: unknown };
    if (typeof parsed.error === 'string') {
      reason =
        typeof parsed.error_description === 'string'
          ? `${parsed.error}: ${parsed.error_description}`.slice(0, MAX_EXCERPT)
          : parsed.error.slice(0, MAX_EXCERPT);
    }
  } catch {
    // Not JSON: the excerpt as it is.
  }
  return new KafkaAuthenticationError(
    `the OAuth token endpoint (KAFKA_SASL_OAUTH_TOKEN_URL) refused the client (${status} ${reason}): check KAFKA_SASL_OAUTH_CLIENT_ID, KAFKA_SASL_OAUTH_CLIENT_SECRET and KAFKA_SASL_OAUTH_SCOPE`,
    ['KAFKA_SASL_OAUTH_CLIENT_ID', 'KAFKA_SASL_OAUTH_CLIENT_SECRET', 'KAFKA_SASL_OAUTH_SCOPE'],
  );
}

/**
 * OAuth 2 client credentials (RFC 6749 §4.4) for SASL/OAUTHBEARER: the client id and secret go in
 * HTTP basic auth (§2.3.1, form-encoded first), the scope in the form. A token is reused until
 * REFRESH_AT_SHARE of its lifetime, then replaced; one request at a time, shared by every caller. A
 * 400 or 401 (the endpoint refusing the client) is KafkaAuthenticationError, which stops the
 * service; any other failure is a retriable KafkaError, and the current token is offered until it
 * expires. The secret is never logged.
 */
export function createOAuthTokenSource(
  config: KafkaOAuthConfig,
  logger: Logger,
  now: () => number = Date.now,
): OAuthTokenSource {
  const log = logger.child({ component: 'oauth' });
  const basic = Buffer.from(
    `${encodeURIComponent(config.clientId)}:${encodeURIComponent(config.clientSecret)}`,
  ).toString('base64');
  let current: Token | undefined;
  let inFlight: Promise<Token> | undefined;

  async function fetchToken(): Promise<Token> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (config.scope) form.set('scope', config.scope);
    const asked = now();
    let status: number;
    let body: string;
    try {
      const response = await request(config.tokenUrl, {
        method: 'POST',
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
        headersTimeout: TOKEN_TIMEOUT_MS,
        bodyTimeout: TOKEN_TIMEOUT_MS,
      });
      status = response.statusCode;
      body = await response.body.text();
    } catch (err) {
      throw new KafkaError(
        `fetching an OAuth token from KAFKA_SASL_OAUTH_TOKEN_URL failed: ${(err as Error).message}`,
        {
          retriable: true,
          cause: err,
        },
      );
    }
    if (status === 400 || status === 401) throw refusal(status, body);
    if (status !== 200) {
      throw new KafkaError(`the OAuth token endpoint (KAFKA_SASL_OAUTH_TOKEN_URL) answered ${status}`, {
        retriable: true,
      });
    }
    let parsed: { access_token?: unknown; expires_in?: unknown };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      parsed = {};
    }
    if (typeof parsed.access_token !== 'string' || parsed.access_token === '') {
      throw new KafkaError(
        'the OAuth token endpoint (KAFKA_SASL_OAUTH_TOKEN_URL) answered without an access_token',
        {
          retriable: true,
        },
      );
    }
    const lifetimeS =
      typeof parsed.expires_in === 'number' && parsed.expires_in > 0 ? parsed.expires_in : DEFAULT_LIFETIME_S;
    log.debug({ expiresInS: lifetimeS }, 'OAuth token obtained');
    return {
      value: parsed.access_token,
      refreshAt: asked + lifetimeS * 1000 * REFRESH_AT_SHARE,
      expiresAt: asked + lifetimeS * 1000,
    };
  }

  return {
    async token() {
      const at = now();
      if (current && at < current.refreshAt) return current.value;
      inFlight ??= fetchToken().finally(() => {
        inFlight = undefined;
      });
      try {
        current = await inFlight;
        return current.value;
      } catch (err) {
        // A refresh that failed for a passing reason: the token in hand is still good until it expires.
        if (err instanceof KafkaError && current && now() < current.expiresAt) {
          log.warn({ err }, 'refreshing the OAuth token failed; the current one is used until it expires');
          return current.value;
        }
        throw err;
      }
    },
  };
}
