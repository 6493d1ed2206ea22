import { type FraudlinkError, SchemaRegistryError } from '../errors.ts';
import { causeChain } from './errors.ts';

/**
 * Socket-level failures. mappersmith, the HTTP layer of @kafkajs/confluent-schema-registry, reports a
 * failed connection as a response of status 400 whose message is the socket error's, and drops the
 * original error: its code survives only in the message text. A request that reached its timeout
 * (registry.ts sets one on each) is reported the same way, as "Timeout (10000ms)", and a connection
 * dropped during the TLS handshake by Node's own message for it (its ECONNRESET code is not in it).
 */
const NETWORK_FAILURE =
  /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|socket hang up)\b|\bTimeout \(\d+ ?ms\)|\bClient network socket disconnected before secure TLS connection was established\b/;

/**
 * A registry that refuses every write for now, an operator's doing that ends: Confluent's READONLY,
 * READONLY_OVERRIDE or IMPORT mode (422, error_code 42205: "Subject … is in read-only mode", "… is
 * not in read-write mode") and Apicurio's read-only storage (`apicurio.storage.read-only.enabled`:
 * 409, error_code 0, "Unsupported write operation. Storage is in read-only mode."). The client keeps
 * neither the body nor its error_code, only the body's message in its own: that wording is all that
 * tells these from a schema refused as invalid (422, 42201) or incompatible (409). Apicurio's ccompat
 * `PUT /mode` READONLY is stored but not enforced (3.3.3 still registers).
 */
const READ_ONLY = /\bread-only mode\b|\bnot in read-write mode\b/i;

/** Node's words for a registry certificate it does not trust, or one for another host. */
const UNTRUSTED_CERTIFICATE =
  /\bunable to verify the first certificate\b|\bself[- ]signed certificate\b|\bunable to get (local )?issuer certificate\b|\bcertificate has expired\b|\bHostname\/IP does not match\b/i;

/** OpenSSL's words for the registry's TLS alert about our client certificate (missing or refused). */
const CLIENT_CERTIFICATE_REFUSED =
  /\balert (certificate required|bad certificate|unknown ca|certificate unknown|certificate expired|certificate revoked|access denied|handshake failure)\b/i;

/**
 * What a TLS failure means for the operator, or undefined for another failure: mappersmith words
 * both as a status 400 whose message is Node's or OpenSSL's, their codes dropped.
 */
function tlsHint(message: string): string | undefined {
  if (UNTRUSTED_CERTIFICATE.test(message)) {
    return `the registry's TLS certificate is not trusted (${message}): SCHEMA_REGISTRY_TLS_CA must name the CA that signed it, for SCHEMA_REGISTRY_URL's host`;
  }
  if (CLIENT_CERTIFICATE_REFUSED.test(message)) {
    return `the registry refused the TLS client certificate, or its absence (${message.trim()}): SCHEMA_REGISTRY_TLS_CERT and SCHEMA_REGISTRY_TLS_KEY must name one it accepts`;
  }
  return undefined;
}

function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

/** The registry (or whatever answers at its URL) answered 404. */
export function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404;
}

/** The registry refused the account the request (401, 403). */
export function isRefused(err: unknown): boolean {
  const status = statusOf(err);
  return status === 401 || status === 403;
}

/**
 * The registry refused the schema itself under its subject: incompatible with what is registered
 * there under the subject's compatibility rule (409), or invalid (422, Apicurio's and Confluent's
 * error_code 42201; the client keeps only the status). Also the client's own refusal to register
 * under a subject configured with a compatibility level other than the one it was given. Each stays
 * so until someone changes that subject, and concerns that subject only; a refused account (401,
 * 403), a wrong URL (404), a registry in read-only mode (READ_ONLY: 409 or 422 too) or a failing
 * registry concern every subject.
 */
export function isSchemaRefusal(err: unknown): boolean {
  for (const e of causeChain(err)) {
    if (READ_ONLY.test(e.message ?? '')) return false;
    const status = statusOf(e);
    if (status === 409 || status === 422 || e.name === 'ConfluentSchemaRegistryCompatibilityError')
      return true;
  }
  return false;
}

/**
 * The registry takes no writes for now (READ_ONLY): a schema it does not hold yet cannot be
 * registered under any subject until an operator ends that mode.
 */
export function isReadOnlyRegistry(err: unknown): boolean {
  for (const e of causeChain(err)) if (READ_ONLY.test(e.message ?? '')) return true;
  return false;
}

/**
 * True when asking again later may succeed: the registry is unreachable, overloaded or failing, or
 * refuses writes for now (READ_ONLY).
 */
export function isRetriableRegistryFailure(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  if (NETWORK_FAILURE.test(message) || READ_ONLY.test(message)) return true;
  const status = statusOf(err);
  return status !== undefined && (status >= 500 || status === 408 || status === 429);
}

/**
 * The client words an error answer by its body's `message`, the registry's own; any other body, such
 * as the 404 page of a server whose path is not the registry's API (SCHEMA_REGISTRY_URL without
 * Apicurio's `/apis/ccompat/v7`, say), came out as `status 404: [object Object]`.
 */
const FOREIGN_BODY = /: \[object Object\]$/;

/** A registry client failure in the project's model. */
export function registryError(err: unknown, what: string): FraudlinkError {
  const raw = err instanceof Error ? err.message : String(err);
  const tls = tlsHint(raw);
  if (tls !== undefined)
    return new SchemaRegistryError(`${what} failed: ${tls}`, { cause: err, retriable: false });
  const message = raw.replace(
    FOREIGN_BODY,
    isNotFound(err)
      ? ', not from a schema registry: does SCHEMA_REGISTRY_URL name its API root (Apicurio: …/apis/ccompat/v7)?'
      : ', not from a schema registry',
  );
  return new SchemaRegistryError(`${what} failed: ${message}`, {
    cause: err,
    retriable: isRetriableRegistryFailure(err),
  });
}
