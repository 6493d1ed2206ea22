import {
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

type Make = (message: string, details: UpstreamErrorDetails) => UpstreamError;

/** The one table from HTTP status to typed error. */
const byStatus: { test: (status: number) => boolean; make: Make }[] = [
  { test: (s) => s === 401 || s === 403, make: (m, d) => new UpstreamUnauthorizedError(m, d) },
  { test: (s) => s === 429, make: (m, d) => new UpstreamRateLimitedError(m, d) },
  { test: (s) => s === 404, make: (m, d) => new UpstreamNotFoundError(m, d) },
  { test: (s) => s >= 500, make: (m, d) => new UpstreamUnavailableError(m, d) },
  { test: (s) => s >= 400, make: (m, d) => new UpstreamClientError(m, d) },
];

export function errorForStatus(details: UpstreamErrorDetails & { status: number }): UpstreamError {
  const entry = byStatus.find((e) => e.test(details.status));
  const message = `${details.method} ${details.path} answered ${details.status}${
    details.bodyExcerpt ? `: ${details.bodyExcerpt}` : ''
  }`;
  return (entry?.make ?? ((m, d) => new UpstreamBadResponseError(m, d)))(message, details);
}

const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Socket and timer failures from undici into the error model; an abort is passed on as it is. */
export function errorForTransport(err: unknown, details: UpstreamErrorDetails): unknown {
  const code = (err as { code?: string }).code ?? '';
  const what = `${details.method} ${details.path}`;
  if (code === 'UND_ERR_ABORTED' || (err as Error).name === 'AbortError') return err;
  if (TIMEOUTS.has(code)) return new UpstreamTimeoutError(`${what} timed out (${code})`, details, err);
  return new UpstreamConnectionError(
    `${what} failed: ${(err as Error).message} (${code || 'no code'})`,
    details,
    err,
  );
}

export function excerpt(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
