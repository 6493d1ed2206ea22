import type { SandboxUpstream, TlsFiles } from '../api/types.ts';
import {
  AbortedError,
  ConfigError,
  ErrorCodes,
  type FraudlinkError,
  InvalidInputError,
  UpstreamBadResponseError,
  UpstreamClientError,
  UpstreamConnectionError,
  type UpstreamErrorDetails,
  UpstreamNotFoundError,
  UpstreamRateLimitedError,
  UpstreamTimeoutError,
  UpstreamUnauthorizedError,
  UpstreamUnavailableError,
} from '../errors.ts';
import type { ExportRequest } from './cursor.ts';
import type { PageRetry } from './pages.ts';
import type { PreparedPage } from './prepare.ts';

/** The messages between the connector's main thread and its page worker (page-worker.ts). */

export interface PageWorkerData {
  api: {
    baseUrl: string;
    apiKey: string;
    timeoutMs: number;
    cursorParam: string;
    tls?: TlsFiles;
    sandboxUpstream: SandboxUpstream;
  };
  /** The ids the registry gave the alert schemas at start; the worker loads the schemas itself. */
  schemas: Record<'AlertUpserted' | 'AlertDeactivated', { schemaId: number; subject: string }>;
  logLevel: string;
  readAhead: number;
  /** The alerts topic's max.message.bytes: a larger event goes to the DLQ (PageLimits). */
  eventMaxBytes?: number;
}

export type ToWorker =
  | { type: 'next'; id: number; request: ExportRequest }
  | { type: 'abort'; id: number }
  | { type: 'close' };

export type ToMain =
  | { type: 'page'; id: number; page: PreparedPage }
  | { type: 'error'; id: number; error: SerializedError }
  | ({ type: 'retry' } & PageRetry);

/** An error as it crosses the thread boundary: structured clone would keep only its message. */
export interface SerializedError extends UpstreamErrorDetails {
  name: string;
  code: string | undefined;
  message: string;
  rule?: string;
  /** A ConfigError's (the sandbox refused as the upstream). */
  problems?: { variable: string; message: string }[];
  stack?: string;
}

export function serializeError(err: unknown): SerializedError {
  if (!(err instanceof Error)) return { name: 'Error', code: undefined, message: String(err) };
  const e = err as Error & UpstreamErrorDetails & { code?: unknown; rule?: unknown };
  const out: SerializedError = {
    name: e.name,
    code: typeof e.code === 'string' ? e.code : undefined,
    message: e.message,
  };
  if (e.stack !== undefined) out.stack = e.stack;
  if (typeof e.rule === 'string') out.rule = e.rule;
  if (err instanceof ConfigError) out.problems = err.problems.map((p) => ({ ...p }));
  for (const k of ['status', 'method', 'path', 'bodyExcerpt', 'retryAfterMs'] as const) {
    if (e[k] !== undefined) (out as unknown as Record<string, unknown>)[k] = e[k];
  }
  return out;
}

type UpstreamErrorClass = new (message: string, details?: UpstreamErrorDetails) => FraudlinkError;

const upstreamClasses: Record<string, UpstreamErrorClass> = {
  [ErrorCodes.UPSTREAM_UNAUTHORIZED]: UpstreamUnauthorizedError,
  [ErrorCodes.UPSTREAM_RATE_LIMITED]: UpstreamRateLimitedError,
  [ErrorCodes.UPSTREAM_UNAVAILABLE]: UpstreamUnavailableError,
  [ErrorCodes.UPSTREAM_CLIENT_ERROR]: UpstreamClientError,
  [ErrorCodes.UPSTREAM_NOT_FOUND]: UpstreamNotFoundError,
  [ErrorCodes.UPSTREAM_BAD_RESPONSE]: UpstreamBadResponseError,
  [ErrorCodes.UPSTREAM_TIMEOUT]: UpstreamTimeoutError,
  [ErrorCodes.UPSTREAM_CONNECTION]: UpstreamConnectionError,
};

/** The same error class and details on this side; an error of no known code stays a plain Error (a bug). */
export function reviveError(s: SerializedError): Error {
  const { name, code, message, rule, problems, stack, ...details } = s;
  let err: Error;
  const Upstream = code === undefined ? undefined : upstreamClasses[code];
  if (Upstream) err = new Upstream(message, details);
  else if (code === ErrorCodes.ABORTED) err = new AbortedError(message);
  else if (code === ErrorCodes.INVALID_INPUT) err = new InvalidInputError(rule ?? 'UNKNOWN', message);
  else if (code === ErrorCodes.CONFIG_INVALID) err = new ConfigError(problems ?? []);
  else {
    err = new Error(message);
    err.name = name;
  }
  if (stack !== undefined) err.stack = stack;
  return err;
}
