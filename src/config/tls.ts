import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Env, Problem } from './index.ts';

/** The variables naming one client's TLS files: its certificate, its private key and a CA bundle. */
export interface TlsVariables {
  /** The URL the files are for, if any: over http:// they would go unused. */
  url?: string;
  cert: string;
  key: string;
  ca: string;
}

export const API_TLS: TlsVariables = {
  url: 'API_BASE_URL',
  cert: 'API_TLS_CERT',
  key: 'API_TLS_KEY',
  ca: 'API_TLS_CA',
};

export const REGISTRY_TLS: TlsVariables = {
  url: 'SCHEMA_REGISTRY_URL',
  cert: 'SCHEMA_REGISTRY_TLS_CERT',
  key: 'SCHEMA_REGISTRY_TLS_KEY',
  ca: 'SCHEMA_REGISTRY_TLS_CA',
};

export const KAFKA_TLS: TlsVariables = { cert: 'KAFKA_TLS_CERT', key: 'KAFKA_TLS_KEY', ca: 'KAFKA_TLS_CA' };

/** What `check` throws, as a reason in brackets (OpenSSL's words, never the file's content). */
function failure(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    return `(${err instanceof Error ? err.message : String(err)})`;
  }
}

/**
 * The TLS files, read and tried at start: the clients read them only when they first connect, where
 * a missing file or a key that is not the certificate's was a failure long after start-up, and a CA
 * bundle OpenSSL cannot read is silently ignored. Problems name the variable, not the path.
 */
function fileProblems(env: Env, vars: TlsVariables): Problem[] {
  const problems: Problem[] = [];
  const read = (variable: string): Buffer | undefined => {
    const file = env[variable]?.trim();
    if (!file) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      problems.push({ variable, message: `cannot read the file it names (${reason})` });
      return undefined;
    }
  };
  const cert = read(vars.cert);
  const key = read(vars.key);
  const ca = read(vars.ca);
  const refuse = (variable: string, message: string, check: () => unknown): boolean => {
    const why = failure(check);
    if (why !== undefined) problems.push({ variable, message: `${message} ${why}` });
    return why === undefined;
  };
  const certOk =
    cert !== undefined && refuse(vars.cert, 'is not a PEM certificate', () => createSecureContext({ cert }));
  const keyOk =
    key !== undefined &&
    refuse(vars.key, 'is not an unencrypted PEM private key', () => createSecureContext({ key }));
  if (certOk && keyOk) {
    refuse(vars.key, `is not the private key of ${vars.cert}'s certificate`, () =>
      createSecureContext({ cert, key }),
    );
  }
  if (ca !== undefined) {
    refuse(vars.ca, 'is not a PEM certificate bundle', () => {
      if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no BEGIN CERTIFICATE line');
      return new X509Certificate(ca);
    });
  }
  return problems;
}

/** One client's TLS files, the pairing of certificate and key, and the scheme of the URL they need. */
export function tlsProblems(env: Env, vars: TlsVariables): Problem[] {
  const isSet = (v: string) => (env[v] ?? '').trim() !== '';
  const set = [vars.cert, vars.key, vars.ca].filter(isSet);
  if (set.length === 0) return [];
  const problems = fileProblems(env, vars);
  if (isSet(vars.cert) !== isSet(vars.key)) {
    problems.push({
      variable: isSet(vars.cert) ? vars.key : vars.cert,
      message: `${vars.cert} and ${vars.key} go together`,
    });
  }
  if (vars.url !== undefined && /^\s*http:/i.test(env[vars.url] ?? '')) {
    problems.push({ variable: vars.url, message: `must be an https:// URL when ${set.join(', ')} is set` });
  }
  return problems;
}

/**
 * The KAFKA_TLS_* files, read and tried as the API's are. Any of them turns TLS on, so KAFKA_SSL=false
 * beside one is a contradiction.
 */
export function kafkaTlsProblems(env: Env): Problem[] {
  const problems = tlsProblems(env, KAFKA_TLS);
  const set = [KAFKA_TLS.cert, KAFKA_TLS.key, KAFKA_TLS.ca].filter((v) => (env[v] ?? '').trim() !== '');
  if (set.length > 0 && /^\s*(false|0|no|off)\s*$/i.test(env.KAFKA_SSL ?? '')) {
    problems.push({ variable: 'KAFKA_SSL', message: `must not be false when ${set.join(', ')} is set` });
  }
  return problems;
}
