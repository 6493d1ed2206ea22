import type { z } from 'zod';
import { InvalidInputError, UpstreamBadResponseError, UpstreamTimeoutError } from '../errors.ts';
import { silentLogger } from '../logger.ts';
import { defaultRetryPolicy, MAX_TIMER_MS, type RetryPolicy, retry } from '../retry.ts';
import { errorForTransport, type RequestContext } from './http-errors.ts';
import {
  checkExportEnvelope,
  fullAlertSchema,
  receivedSearchSchema,
  sentSearchSchema,
  verifyResultSchema,
} from './schemas.ts';
import { createTransport, excerpt, type OutgoingRequest, type RawResponse } from './transport.ts';
import type {
  ApiClient,
  ApiClientOptions,
  CallOptions,
  ExportPage,
  ReceivedSearchFilters,
  SentSearchFilters,
} from './types.ts';

/** Per-endpoint retry defaults; the client's `retry` option and then each call's override them. */
export const retryDefaults = {
  /** The VoP budget is a few seconds: short waits, and as many tries as the deadline leaves room for. */
  verify: { retries: 5, initialDelayMs: 100, maxDelayMs: 1000 },
  search: { ...defaultRetryPolicy },
  export: { retries: 10, initialDelayMs: 200, maxDelayMs: 30_000 },
} as const satisfies Record<string, Partial<RetryPolicy>>;

const receivedKeys = ['iban', 'qualification', 'updatedFrom', 'updatedTo', 'page', 'pageSize'] as const;
const sentKeys = [...receivedKeys, 'bic', 'author'] as const;

/** Only the filters the endpoint knows, without undefined values. */
function pick<T extends object>(filters: T, keys: readonly string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const key of keys) {
    const value = (filters as Record<string, unknown>)[key];
    if (value !== undefined) body[key] = value;
  }
  return body;
}

/**
 * A signal that also fires once the attempt has run `timeoutMs` or at `deadline`, whichever comes
 * first, telling afterwards which of the two cut it off. undici's timeouts only bound each silence,
 * so without it a server dripping a byte a second would hold an attempt for ever.
 */
function attemptGuard(signal: AbortSignal | undefined, deadline: number | undefined, timeoutMs: number) {
  const start = Date.now();
  const attemptEnd = start + Math.min(timeoutMs, MAX_TIMER_MS);
  // A deadline weeks away (Long.MAX_VALUE for "none") lies past the attempt's end and arms nothing
  // of its own: as a timer it would overflow and cut every attempt off after 1 ms, for ever.
  const byDeadline = deadline !== undefined && deadline <= attemptEnd;
  const controller = new AbortController();
  let cutOff: 'deadline' | 'attempt' | undefined;
  const timer = setTimeout(
    () => {
      cutOff = byDeadline ? 'deadline' : 'attempt';
      controller.abort();
    },
    Math.max(0, (byDeadline ? deadline : attemptEnd) - start),
  );
  timer.unref();
  // The caller's signal is followed by a listener removed after the call, not by AbortSignal.any:
  // on Node 24 a signal combined with a long-lived one (a component's stop signal) stays reachable
  // from it, ~1 KB per call, until that one aborts (AbortSignal.any alone, measured: 1.1 GB still
  // reachable after a million, against 4 MB when both signals are short-lived).
  const follow = () => controller.abort(signal?.reason);
  if (signal?.aborted) follow();
  else signal?.addEventListener('abort', follow, { once: true });
  return {
    signal: controller.signal,
    cutOff: () => cutOff,
    dispose: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', follow);
    },
  };
}

/**
 * The body parsed, or a bad response carrying the masked excerpt. JSON.parse's SyntaxError is not
 * kept as the cause: V8 quotes the raw text around the fault in its message (`"{"iban":DE89370400"...
 * is not valid JSON`), unmasked, and a logged error prints its causes. Only the position is kept.
 */
function parseJson(raw: RawResponse, context: RequestContext, apiKey: string): unknown {
  try {
    return JSON.parse(raw.text);
  } catch (err) {
    const bodyExcerpt = excerpt(raw.text, apiKey);
    const position = /at position (\d+)/.exec((err as Error).message)?.[1];
    const where = position === undefined ? '' : ` (at position ${position})`;
    throw new UpstreamBadResponseError(
      `${context.method} ${context.path} answered a body that is not JSON${where}: ${bodyExcerpt}`,
      { ...context, bodyExcerpt },
    );
  }
}

function validated<S extends z.ZodType>(schema: S, value: unknown, context: RequestContext): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ');
  throw new UpstreamBadResponseError(
    `${context.method} ${context.path} answered an unexpected shape: ${issues}`,
    context,
  );
}

/**
 * An alert id that cannot go into the path: `.` and `..` are dot segments there, which URL parsers
 * and normalising routers resolve to another endpoint (`%2E` is read as a dot too).
 */
export const isDotSegment = (id: string): boolean => id === '.' || id === '..';

/**
 * The typed client of the upstream service: one keep-alive dispatcher, retries at this one layer
 * (callers do not wrap it again), every failure a typed error from the error model.
 */
export function createApiClient(options: ApiClientOptions): ApiClient {
  if (!/^https?:$/.test(URL.parse(options.baseUrl)?.protocol ?? '')) {
    throw new TypeError(
      `createApiClient: baseUrl must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`,
    );
  }
  if (!(options.timeoutMs > 0)) throw new TypeError('createApiClient: timeoutMs must be a positive number');
  const { maxResponseBytes } = options;
  if (maxResponseBytes !== undefined && !(Number.isSafeInteger(maxResponseBytes) && maxResponseBytes > 0)) {
    throw new TypeError('createApiClient: maxResponseBytes must be a positive integer');
  }
  const transport = createTransport(options);
  const logger = options.logger ?? silentLogger();
  const cursorParam = options.cursorParam ?? 'cursor';

  /** One call: attempts bounded by the deadline, retried by the merged policy, parsed by `parse`. */
  const call = <T>(
    request: Omit<OutgoingRequest, 'signal'>,
    parse: (value: unknown, raw: RawResponse, context: RequestContext) => T,
    defaults: Partial<RetryPolicy>,
    opts: CallOptions = {},
  ): Promise<T> => {
    const context = transport.context(request);
    const attempt = async (): Promise<T> => {
      if (opts.deadline !== undefined && Date.now() >= opts.deadline) {
        throw new UpstreamTimeoutError(
          `${context.method} ${context.path} not sent: the deadline has passed`,
          context,
        );
      }
      const guard = attemptGuard(opts.signal, opts.deadline, options.timeoutMs);
      try {
        const raw = await transport.send({ ...request, signal: guard.signal });
        return parse(parseJson(raw, context, options.apiKey), raw, context);
      } catch (err) {
        const cutOff = guard.cutOff();
        throw errorForTransport(err, context, {
          signal: opts.signal,
          deadlineHit: cutOff === 'deadline',
          ...(cutOff === 'attempt' && { attemptTimeoutMs: options.timeoutMs }),
        });
      } finally {
        guard.dispose();
      }
    };
    const policy = opts.retry === false ? { retries: 0 } : { ...defaults, ...options.retry, ...opts.retry };
    return retry(attempt, {
      ...policy,
      ...(opts.signal && { signal: opts.signal }),
      ...(opts.deadline !== undefined && { deadline: opts.deadline }),
      onRetry: (info) => {
        const code = (info.error as { code?: unknown }).code;
        logger.debug(
          { ...context, attempt: info.attempt, delayMs: info.delayMs, code },
          'retrying upstream call',
        );
        opts.onRetry?.(info);
      },
    });
  };

  const search = (path: string, body: Record<string, unknown>, sent: boolean, opts?: CallOptions) =>
    call(
      { method: 'POST', path, body },
      (value, _raw, context) => validated(sent ? sentSearchSchema : receivedSearchSchema, value, context),
      retryDefaults.search,
      opts,
    );

  return {
    verify: (request, opts) =>
      call(
        {
          method: 'POST',
          path: '/vop/v1/verify',
          body: { iban: request.iban, party: { name: request.party.name } },
        },
        (value, _raw, context) => {
          const result = validated(verifyResultSchema, value, context);
          return result.matchedName === undefined
            ? { partyNameMatch: result.partyNameMatch }
            : { partyNameMatch: result.partyNameMatch, matchedName: result.matchedName };
        },
        // With a deadline, retries stop when it would pass rather than after a count.
        opts?.deadline === undefined ? retryDefaults.verify : { ...retryDefaults.verify, retries: Infinity },
        opts,
      ),
    searchSent: (filters: SentSearchFilters, opts) =>
      search('/sharing/v1/alerts/sent/search', pick(filters, sentKeys), true, opts),
    searchReceived: (filters: ReceivedSearchFilters, opts) =>
      search('/sharing/v1/alerts/received/search', pick(filters, receivedKeys), false, opts),
    getAlert: (alertId, opts) => {
      const id = String(alertId);
      if (id === '') return Promise.reject(new TypeError('getAlert: alertId must not be empty'));
      // encodeURIComponent leaves dots alone.
      if (isDotSegment(id)) {
        return Promise.reject(
          new InvalidInputError(
            'ALERT_ID_DOT_SEGMENT',
            `getAlert: alert id "${id}" cannot be sent: in the path it reads as a dot segment, naming another endpoint`,
          ),
        );
      }
      return call(
        { method: 'GET', path: `/sharing/v1/alerts/${encodeURIComponent(id)}` },
        (value, _raw, context) => validated(fullAlertSchema, value, context),
        retryDefaults.search,
        opts,
      );
    },
    exportPage: (request, opts) => {
      const query = new URLSearchParams();
      if (request.updatedAfter !== undefined) query.set('updatedAfter', request.updatedAfter);
      if (request.cursor !== undefined) query.set(cursorParam, request.cursor);
      const qs = query.size > 0 ? `?${query}` : '';
      return call(
        { method: 'GET', path: `/sharing/v1/alerts/export${qs}` },
        (value, raw, context): ExportPage => {
          const checked = checkExportEnvelope(value);
          if (!checked.ok) {
            throw new UpstreamBadResponseError(
              `${context.method} ${context.path}: ${checked.reason}`,
              context,
            );
          }
          return { ...checked.page, bytes: raw.bytes };
        },
        retryDefaults.export,
        opts,
      );
    },
    close: () => transport.close(),
  };
}
