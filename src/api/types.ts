import type { Logger } from '../logger.ts';
import type { RetryPolicy } from '../retry.ts';

/** EPC Verification-of-Payee name-match codes. */
export type PartyNameMatch = 'MTCH' | 'CMTC' | 'NMTC' | 'NOAP';

export interface VerifyRequest {
  iban: string;
  party: { name: string };
}

export interface VerifyResult {
  partyNameMatch: PartyNameMatch;
  /** Only with CMTC (close match): the name the account is held under. */
  matchedName?: string;
}

/** Filters of the received search; `updatedFrom`/`updatedTo` are ISO-8601 instants, `page` is 1-based. */
export interface ReceivedSearchFilters {
  iban?: string;
  qualification?: string;
  updatedFrom?: string;
  updatedTo?: string;
  page?: number;
  pageSize?: number;
}

/** The sent search adds the `bic` and `author` filters. */
export interface SentSearchFilters extends ReceivedSearchFilters {
  bic?: string;
  author?: string;
}

/**
 * An alert as searches return it. Only `id` is enforced; the other documented fields are typed
 * where present and unknown fields are kept as received.
 */
export interface AlertSummary {
  id: string | number;
  iban?: string;
  bic?: string | null;
  qualification?: string;
  reportsCount?: number;
  updatedAt?: string | number;
  isActive?: boolean;
  [field: string]: unknown;
}

/** A sent-search alert splits its reports into the caller's and everyone else's. */
export interface SentAlertSummary extends AlertSummary {
  myReports?: unknown[];
  otherReports?: unknown[];
}

export interface SearchPage<A extends AlertSummary = AlertSummary> {
  page: number;
  totalPages: number;
  totalAlerts: number;
  alerts: A[];
}

/** The fetch-one answer: its structure is not documented upstream, so only `id` is enforced. */
export interface FullAlert {
  id: string | number;
  [field: string]: unknown;
}

export interface ExportRequest {
  /** Opaque cursor from the previous page's `nextCursor`. */
  cursor?: string;
  /** ISO-8601 instant, exclusive: resume after this point. */
  updatedAfter?: string;
}

export interface ExportPage {
  /** Rows exactly as parsed from JSON, unvalidated: the caller checks each one. */
  rows: unknown[];
  /** `null` once the feed is caught up. */
  nextCursor: string | null;
  /** Size of the response body, in bytes. */
  bytes?: number;
}

export interface RetryInfo {
  attempt: number;
  delayMs: number;
  error: unknown;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Epoch ms: no attempt or backoff runs past it, and a request still in flight then is cut off. */
  deadline?: number;
  /** `false` makes exactly one attempt; an object overrides the client's policy for this call. */
  retry?: false | Partial<RetryPolicy>;
  onRetry?: (info: RetryInfo) => void;
}

/** Client certificate, key and CA, as file paths (read once at creation) or as PEM contents. */
export type TlsFiles = { certFile?: string; keyFile?: string; caFile?: string };
export type TlsPem = { cert?: string | Buffer; key?: string | Buffer; ca?: string | Buffer };

export interface ApiClientOptions {
  /** e.g. `https://host/api`; `/vop/v1/...` and `/sharing/v1/...` are appended. */
  baseUrl: string;
  apiKey: string;
  /** Time limit of one attempt, from connecting to the body's last byte (undici's timeouts too). */
  timeoutMs: number;
  tls?: TlsFiles | TlsPem;
  /** Query parameter carrying the export cursor (EXPORT_CURSOR_PARAM); default `cursor`. */
  cursorParam?: string;
  logger?: Logger;
  /** Overrides the default retry policy of every method. */
  retry?: Partial<RetryPolicy>;
  /** Largest response body accepted, in bytes; default 64 MiB. A larger 2xx is a bad response. */
  maxResponseBytes?: number;
  /**
   * What an answer with the sandbox's mark (`x-fraudlink-sandbox: 1`) does: `allow` (default) takes
   * it; `refuse` fails the call, and every later one, with SandboxUpstreamError, not retried.
   */
  sandboxUpstream?: SandboxUpstream;
}

export type SandboxUpstream = 'allow' | 'refuse';

export interface ApiClient {
  verify(request: VerifyRequest, options?: CallOptions): Promise<VerifyResult>;
  searchSent(filters: SentSearchFilters, options?: CallOptions): Promise<SearchPage<SentAlertSummary>>;
  searchReceived(filters: ReceivedSearchFilters, options?: CallOptions): Promise<SearchPage>;
  getAlert(alertId: string | number, options?: CallOptions): Promise<FullAlert>;
  exportPage(request: ExportRequest, options?: CallOptions): Promise<ExportPage>;
  /** Closes the keep-alive connections; calls made afterwards fail. */
  close(): Promise<void>;
}
