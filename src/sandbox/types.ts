import type { Logger } from '../logger.ts';
import type { ExportRow } from './alerts.ts';
import type { SandboxFaults } from './faults.ts';
import type { SandboxRequest } from './request-log.ts';
import type { MalformedKind } from './world.ts';

export interface SandboxTls {
  cert: string | Buffer;
  key: string | Buffer;
  /** CA of the client certificates, for mutual TLS. */
  ca?: string | Buffer;
  /** Require a client certificate signed by `ca` on every connection. */
  requestClientCert?: boolean;
}

export interface SandboxOptions {
  /** Default 127.0.0.1; not empty (which would listen on all interfaces). */
  host?: string;
  /** Default 8080; 0 = any free port. */
  port?: number;
  /** A path prefix the service lives under, e.g. /api; default none. */
  basePath?: string;
  /**
   * Each key is one tenant (institution); default ['sandbox-key']. Trimmed, then as API_KEY:
   * printable ASCII without spaces.
   */
  apiKeys?: string[];
  /** Seeded alerts, default 1000. */
  alerts?: number;
  /** Default 1. */
  seed?: number;
  /** Automatic changes per second, default 5; 0 = none. */
  changesPerSec?: number;
  /** Export page size, default 500. */
  pageSize?: number;
  /** Export requests per second per tenant, default 10; 0 = unlimited. */
  rateLimit?: number;
  /**
   * Query parameter of the export cursor, default `cursor`. As EXPORT_CURSOR_PARAM: trimmed, not
   * `updatedAfter`.
   */
  cursorParam?: string;
  faults?: Partial<SandboxFaults>;
  tls?: SandboxTls;
  /**
   * The bearer token every /__admin request must carry (`authorization: Bearer TOKEN`). Required
   * when `host` is not loopback: the admin routes change what the service answers. Unset on
   * loopback, they take any request.
   */
  adminToken?: string;
  logger?: Logger;
  /** Clock, for tests. */
  now?: () => number;
}

export interface Sandbox {
  start(): Promise<{ url: string; apiKeys: string[] }>;
  stop(): Promise<void>;
  /** The base URL (API_BASE_URL of a client); empty before start. */
  readonly url: string;
  setFaults(faults: Partial<SandboxFaults>): void;
  faults(): SandboxFaults;
  requestLog(): readonly SandboxRequest[];
  clearRequestLog(): void;
  /** Applies N random changes now, sharing one millisecond (deterministic from the seed). */
  applyChanges(count: number): void;
  /** Puts one malformed row at the end of the feed, cycling through the kinds unless one is named. */
  injectMalformedRow(kind?: MalformedKind): MalformedKind;
  /** The current export row of every alert, in feed order: the final state a consumer must reach. */
  currentRows(): ExportRow[];
  /** The account holder's name of any IBAN, as verification compares it. */
  holderName(iban: string): string;
  /** Institution id of each tenant, in API key order (PSP001, PSP002, ...). */
  tenants(): { apiKey: string; institution: string; bic: string }[];
}
