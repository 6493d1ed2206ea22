import { describe, expect, it } from 'vitest';
import { errorForStatus, errorForTransport } from '../../src/api/http-errors.ts';
import { excerpt } from '../../src/api/transport.ts';
import {
  AbortedError,
  ErrorCodes,
  UpstreamBadResponseError,
  UpstreamClientError,
  UpstreamConnectionError,
  UpstreamNotFoundError,
  UpstreamRateLimitedError,
  UpstreamTimeoutError,
  UpstreamUnauthorizedError,
  UpstreamUnavailableError,
} from '../../src/errors.ts';

const context = { method: 'GET', path: '/sharing/v1/alerts/export' };

describe('the status table', () => {
  it.each([
    [400, UpstreamClientError, false],
    [401, UpstreamUnauthorizedError, false],
    [403, UpstreamUnauthorizedError, false],
    [404, UpstreamNotFoundError, false],
    // A load balancer or proxy that gave up waiting for the request: a timeout like any other.
    [408, UpstreamTimeoutError, true],
    [409, UpstreamClientError, false],
    [422, UpstreamClientError, false],
    [429, UpstreamRateLimitedError, true],
    [500, UpstreamUnavailableError, true],
    [502, UpstreamUnavailableError, true],
    [503, UpstreamUnavailableError, true],
    [504, UpstreamUnavailableError, true],
    [302, UpstreamBadResponseError, false],
  ])('maps %i to %o (retriable: %s)', (status, ErrorClass, retriable) => {
    const error = errorForStatus(status, context, '{"code":"X"}', undefined);
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error).toMatchObject({ status, ...context, bodyExcerpt: '{"code":"X"}', retriable });
    expect(error.message).toBe(`GET /sharing/v1/alerts/export answered ${status}: {"code":"X"}`);
  });

  it('carries the Retry-After hint', () => {
    expect(errorForStatus(429, context, '', 2000).retryAfterMs).toBe(2000);
  });
});

describe('transport failures', () => {
  const state = { deadlineHit: false };
  const withCode = (code: string, message = 'boom') => Object.assign(new Error(message), { code });

  it.each([
    ['UND_ERR_CONNECT_TIMEOUT', ErrorCodes.UPSTREAM_TIMEOUT],
    ['UND_ERR_HEADERS_TIMEOUT', ErrorCodes.UPSTREAM_TIMEOUT],
    ['UND_ERR_BODY_TIMEOUT', ErrorCodes.UPSTREAM_TIMEOUT],
    ['UND_ERR_SOCKET', ErrorCodes.UPSTREAM_CONNECTION],
    ['ECONNRESET', ErrorCodes.UPSTREAM_CONNECTION],
    ['ECONNREFUSED', ErrorCodes.UPSTREAM_CONNECTION],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', ErrorCodes.UPSTREAM_UNAUTHORIZED],
    ['ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', ErrorCodes.UPSTREAM_UNAUTHORIZED],
  ])('maps %s to %s', (code, expected) => {
    expect(errorForTransport(withCode(code), context, state)).toMatchObject({ code: expected, ...context });
  });

  it('reads the code of a wrapped cause', () => {
    const wrapped = new Error('fetch failed', { cause: withCode('ECONNRESET') });
    expect(errorForTransport(wrapped, context, state)).toBeInstanceOf(UpstreamConnectionError);
  });

  it('reports an abort by the caller as AbortedError, whatever undici threw', () => {
    const signal = AbortSignal.abort();
    expect(
      errorForTransport(withCode('UND_ERR_ABORTED'), context, { signal, deadlineHit: false }),
    ).toBeInstanceOf(AbortedError);
  });

  it("reports the expiry of a caller's AbortSignal.timeout as a timeout, not an abort", async () => {
    const signal = AbortSignal.timeout(1);
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    const error = errorForTransport(withCode('UND_ERR_ABORTED'), context, { signal, deadlineHit: false });
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
  });

  it('reports our own deadline timer as a timeout', () => {
    const error = errorForTransport(withCode('UND_ERR_ABORTED'), context, { deadlineHit: true });
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
  });

  it('passes programmer errors through untouched so that they are never retried', () => {
    const bug = new TypeError('x is not a function');
    expect(errorForTransport(bug, context, state)).toBe(bug);
    const badArg = withCode('UND_ERR_INVALID_ARG');
    expect(errorForTransport(badArg, context, state)).toBe(badArg);
  });
});

describe('body excerpts', () => {
  it('collapse whitespace, cap the length and remove the API key', () => {
    expect(excerpt('  a\n\n b  ', 'k3y')).toBe('a b');
    expect(excerpt('your key k3y is bad', 'k3y')).toBe('your key [redacted] is bad');
    expect(excerpt('x'.repeat(500), 'k')).toHaveLength(201);
  });

  it('mask IBANs, compact or in groups of four, to the country code and last four characters', () => {
    const body =
      '{"rows":[{"id":"a1","iban":"FR7630006000011234567890189","n":NaN},{"iban":"de89 3704 0044 0532 0130 00"}';
    const masked = excerpt(body, 'k3y');
    expect(masked).toBe('{"rows":[{"id":"a1","iban":"FR…0189","n":NaN},{"iban":"DE…3000"}');
    expect(excerpt(`${'x '.repeat(95)}GB82WEST12345698765432`, 'k3y')).not.toMatch(/GB82WEST/);
  });

  it('mask IBANs in their print forms, grouped by spaces or by dashes', () => {
    expect(excerpt('iban FR76-3000-6000-0112-3456-7890-189 refused', 'k3y')).toBe('iban FR…0189 refused');
    expect(excerpt('"gb82-west-1234-5698-7654-32"', 'k3y')).toBe('"GB…5432"');
    expect(excerpt('to NO93 8601 1117 947, from BE68-5390-0754-7034', 'k3y')).toBe(
      'to NO…7947, from BE…7034',
    );
  });

  it('mask a grouped IBAN without the words its groups run into', () => {
    expect(excerpt('BE68 5390 0754 7034 from them', 'k3y')).toBe('BE…7034 from them');
    expect(excerpt('BE68-5390-0754-7034-ABCD-EF', 'k3y')).toBe('BE…7034-ABCD-EF');
  });

  it('mask a grouped IBAN a character short or long, whole', () => {
    expect(excerpt('iban FR76 3000 6000 0112 3456 7890 18 refused', 'k3y')).toBe('iban FR…9018 refused');
    expect(excerpt('iban FR76-3000-6000-0112-3456-7890-1890 refused', 'k3y')).toBe('iban FR…1890 refused');
  });

  it('mask each IBAN of a grouped list, also after a code or a word the grouping runs on from', () => {
    expect(excerpt('BE68 5390 0754 7034 BE71 0961 2345 6769', 'k3y')).toBe('BE…7034 BE…6769');
    expect(excerpt('accounts:\nBE68 5390 0754 7034\nBE71 0961 2345 6769', 'k3y')).toBe(
      'accounts: BE…7034 BE…6769',
    );
    expect(excerpt('AT61 1904 3002 3457 3201 ES91 2100 0418 4502 0005 1332', 'k3y')).toBe('AT…3201 ES…1332');
    expect(excerpt('ref ID42 BE68 5390 0754 7034 ok', 'k3y')).toBe('ref ID42 BE…7034 ok');
  });

  it('leave grouped codes and words no IBAN is as long as alone', () => {
    for (const text of [
      'serial SN12-ABCD-EFGH',
      'ticket AB12-3456-7890-1234',
      'see ID42 with care',
      'FR76-3000-6000',
    ]) {
      expect(excerpt(text, 'k3y')).toBe(text);
    }
  });

  it('leave text that only starts like an IBAN alone', () => {
    const text = 'eventId ab12cdef0123456789abcdef0123456789abcdef0123456789abcdef01234567 at 2026-01-01';
    expect(excerpt(text, 'k3y')).toBe(text);
  });
});
