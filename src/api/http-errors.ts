import {
  AbortedError,
  FraudlinkError,
  isProgrammerError,
  UpstreamBadResponseError,
  UpstreamClientError,
  UpstreamConnectionError,
  type UpstreamError,
  type UpstreamErrorDetails,
  UpstreamNotFoundError,
  UpstreamRateLimitedError,
  UpstreamTimeoutError,
  UpstreamUnauthorizedError,
  UpstreamUnavailableError,
} from '../errors.ts';

type UpstreamErrorClass = new (
  message: string,
  details?: UpstreamErrorDetails,
  cause?: unknown,
) => UpstreamError;

/**
 * THE status → error table. A status is looked up exactly, then by its class (`4xx`, `5xx`); anything
 * else that is not 2xx (1xx leftovers, 3xx: the client follows no redirects) is a bad response.
 */
const statusTable: Readonly<Record<string, UpstreamErrorClass>> = {
  '401': UpstreamUnauthorizedError,
  '403': UpstreamUnauthorizedError,
  '404': UpstreamNotFoundError,
  // Request Timeout, from the service or a proxy in front of it that gave up waiting: retried as a
  // timeout (RFC 9110 §15.5.9: the client may repeat the request), not a refusal of the request.
  '408': UpstreamTimeoutError,
  '429': UpstreamRateLimitedError,
  '4xx': UpstreamClientError,
  '5xx': UpstreamUnavailableError,
};

export interface RequestContext {
  method: string;
  /** Path and query as sent, without the origin. */
  path: string;
}

export function errorForStatus(
  status: number,
  context: RequestContext,
  bodyExcerpt: string,
  retryAfterMs: number | undefined,
): UpstreamError {
  const ErrorClass =
    statusTable[String(status)] ?? statusTable[`${Math.floor(status / 100)}xx`] ?? UpstreamBadResponseError;
  const details: UpstreamErrorDetails = { status, ...context, bodyExcerpt };
  if (retryAfterMs !== undefined) details.retryAfterMs = retryAfterMs;
  const summary = bodyExcerpt === '' ? '' : `: ${bodyExcerpt}`;
  return new ErrorClass(`${context.method} ${context.path} answered ${status}${summary}`, details);
}

const timeoutCodes = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** TLS alerts sent by the server about our client certificate: the upstream refused our credentials. */
const refusedClientCertificate =
  /^ERR_SSL_(SSLV3|TLSV1|TLSV13)_ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|ACCESS_DENIED|DECRYPT_ERROR|HANDSHAKE_FAILURE)$/;

function codeOf(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') {
    return err.code;
  }
  return undefined;
}

/**
 * Turns what undici or the socket threw into a typed error. `deadlineHit` tells that our own deadline
 * timer (not the caller's signal) cut the request off; `attemptTimeoutMs`, that the attempt's own
 * time limit did.
 */
export function errorForTransport(
  err: unknown,
  context: RequestContext,
  state: { signal?: AbortSignal; deadlineHit: boolean; attemptTimeoutMs?: number },
): unknown {
  if (err instanceof FraudlinkError) return err;
  const code = codeOf(err) ?? codeOf((err as { cause?: unknown })?.cause);
  // Our bugs (bad arguments to undici included) surface as they are and are never retried.
  if (isProgrammerError(err) || code === 'UND_ERR_INVALID_ARG') return err;
  const where = `${context.method} ${context.path}`;
  if (state.signal?.aborted) {
    // A caller's `AbortSignal.timeout()` is a time limit, not a cancellation.
    const reason: unknown = state.signal.reason;
    if (reason instanceof Error && reason.name === 'TimeoutError') {
      return new UpstreamTimeoutError(
        `${where} did not answer before the caller's time limit`,
        context,
        reason,
      );
    }
    return new AbortedError(`${where} aborted`, { cause: reason });
  }
  if (state.deadlineHit)
    return new UpstreamTimeoutError(`${where} did not answer before the deadline`, context, err);
  if (state.attemptTimeoutMs !== undefined) {
    const limit = `${state.attemptTimeoutMs} ms, the time limit of one attempt`;
    return new UpstreamTimeoutError(`${where} did not finish within ${limit}`, context, err);
  }
  const reason = err instanceof Error ? err.message : String(err);
  if (code !== undefined && timeoutCodes.has(code)) {
    return new UpstreamTimeoutError(`${where} timed out (${code})`, context, err);
  }
  if (code !== undefined && refusedClientCertificate.test(code)) {
    return new UpstreamUnauthorizedError(
      `${where}: the upstream refused the client certificate (${code})`,
      context,
      err,
    );
  }
  return new UpstreamConnectionError(
    `${where} failed: ${code ?? 'connection error'}: ${reason}`,
    context,
    err,
  );
}
