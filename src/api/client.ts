import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import type { z } from 'zod';
import { UpstreamBadResponseError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { parseRetryAfter, type RetryOptions, retry } from '../retry.ts';
import { errorForStatus, errorForTransport, excerpt } from './errors.ts';
import {
  type ExportPage,
  type FullAlert,
  fullAlert,
  type SearchFilters,
  type SearchResponse,
  type SentSearchFilters,
  searchResponse,
  type VerifyResponse,
  verifyResponse,
} from './schemas.ts';

export interface TlsFiles {
  certFile?: string;
  keyFile?: string;
  caFile?: string;
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs?: number;
  tls?: TlsFiles;
  /** Query parameter carrying the export cursor (EXPORT_CURSOR_PARAM). */
  cursorParam?: string;
  logger?: Logger;
  /** Default retry policy of every call; a call may pass its own. */
  retry?: Partial<RetryOptions>;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Epoch ms: no retry starts a wait that would end after it. */
  deadline?: number;
  /** `false` disables retries for this call. */
  retry?: false | Partial<RetryOptions>;
  onRetry?: RetryOptions['onRetry'];
}

export interface ApiClient {
  verify(body: { iban: string; party: { name: string } }, options?: CallOptions): Promise<VerifyResponse>;
  searchSent(filters: SentSearchFilters, options?: CallOptions): Promise<SearchResponse>;
  searchReceived(filters: SearchFilters, options?: CallOptions): Promise<SearchResponse>;
  getAlert(alertId: string, options?: CallOptions): Promise<FullAlert>;
  exportPage(query: { cursor?: string; updatedAfter?: string }, options?: CallOptions): Promise<ExportPage>;
  close(): Promise<void>;
}

interface Call {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
}

/** One keep-alive dispatcher per client, explicit timeouts, optional mutual TLS. */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const tls = options.tls;
  const connect: Record<string, unknown> = { timeout: timeoutMs };
  if (tls?.certFile) connect.cert = readFileSync(tls.certFile);
  if (tls?.keyFile) connect.key = readFileSync(tls.keyFile);
  if (tls?.caFile) connect.ca = readFileSync(tls.caFile);
  const dispatcher = new Agent({
    connect,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 30_000,
    connections: 128,
  });
  const base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
  const cursorParam = options.cursorParam ?? 'cursor';
  const headers = { 'x-api-key': options.apiKey, accept: 'application/json' };

  /** One attempt: status mapped to a typed error, body read whole or not at all. */
  const once = async (call: Call, signal: AbortSignal | undefined): Promise<unknown> => {
    const url = new URL(call.path.replace(/^\//, ''), base);
    for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const details = { method: call.method, path: url.pathname };
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(url, {
        dispatcher,
        method: call.method,
        headers: call.body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(call.body !== undefined && { body: JSON.stringify(call.body) }),
        ...(signal && { signal }),
      });
    } catch (err) {
      throw errorForTransport(err, details);
    }
    let text: string;
    try {
      text = await response.body.text();
    } catch (err) {
      throw errorForTransport(err, { ...details, status: response.statusCode });
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const retryAfter = response.headers['retry-after'];
      const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
      throw errorForStatus({
        ...details,
        status: response.statusCode,
        bodyExcerpt: excerpt(text),
        ...(retryAfterMs !== undefined && { retryAfterMs }),
      });
    }
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new UpstreamBadResponseError(
        `${call.method} ${url.pathname} answered ${response.statusCode} with a body that is not JSON`,
        { ...details, status: response.statusCode, bodyExcerpt: excerpt(text) },
        err,
      );
    }
  };

  const send = (call: Call, callOptions: CallOptions = {}): Promise<unknown> => {
    if (callOptions.retry === false) return once(call, callOptions.signal);
    return retry(() => once(call, callOptions.signal), {
      ...options.retry,
      ...callOptions.retry,
      ...(callOptions.signal && { signal: callOptions.signal }),
      ...(callOptions.deadline !== undefined && { deadline: callOptions.deadline }),
      onRetry: (info) => {
        options.logger?.debug(
          { attempt: info.attempt, delayMs: info.delayMs, code: (info.error as { code?: string }).code },
          'retrying upstream call',
        );
        callOptions.onRetry?.(info);
      },
    });
  };

  const validated = <S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> => {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
    throw new UpstreamBadResponseError(`${what} answered a body of the wrong shape: ${issues}`);
  };

  return {
    async verify(body, callOptions) {
      const value = await send({ method: 'POST', path: 'vop/v1/verify', body }, callOptions);
      return validated(verifyResponse, value, 'POST /vop/v1/verify');
    },
    async searchSent(filters, callOptions) {
      const value = await send(
        { method: 'POST', path: 'sharing/v1/alerts/sent/search', body: filters },
        callOptions,
      );
      return validated(searchResponse, value, 'POST /sharing/v1/alerts/sent/search');
    },
    async searchReceived(filters, callOptions) {
      const value = await send(
        { method: 'POST', path: 'sharing/v1/alerts/received/search', body: filters },
        callOptions,
      );
      return validated(searchResponse, value, 'POST /sharing/v1/alerts/received/search');
    },
    async getAlert(alertId, callOptions) {
      const value = await send(
        { method: 'GET', path: `sharing/v1/alerts/${encodeURIComponent(alertId)}` },
        callOptions,
      );
      return validated(fullAlert, value, 'GET /sharing/v1/alerts/{alertId}');
    },
    async exportPage(query, callOptions) {
      const value = await send(
        {
          method: 'GET',
          path: 'sharing/v1/alerts/export',
          query: { updatedAfter: query.updatedAfter, [cursorParam]: query.cursor },
        },
        callOptions,
      );
      return exportEnvelope(value);
    },
    async close() {
      await dispatcher.close();
    },
  };
}

/**
 * The hot path: only the envelope is checked here (rows an array, nextCursor a string or null);
 * each row is validated by the connector, which sends bad ones to the DLQ instead of failing the page.
 */
export function exportEnvelope(value: unknown): ExportPage {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UpstreamBadResponseError('GET /sharing/v1/alerts/export answered a body that is not an object');
  }
  const { rows, nextCursor } = value as { rows?: unknown; nextCursor?: unknown };
  if (!Array.isArray(rows)) {
    throw new UpstreamBadResponseError('GET /sharing/v1/alerts/export answered a body without a rows array');
  }
  if (
    nextCursor !== undefined &&
    nextCursor !== null &&
    (typeof nextCursor !== 'string' || nextCursor === '')
  ) {
    throw new UpstreamBadResponseError(
      'GET /sharing/v1/alerts/export answered a nextCursor that is not a string or null',
    );
  }
  return { rows, nextCursor: (nextCursor as string | undefined) ?? null };
}
