import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Env, Problem } from './index.ts';

/** What `check` throws, as a reason in brackets (OpenSSL's words, never the file's content). */
function failure(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    return `(${err instanceof Error ? err.message : String(err)})`;
  }
}

/** The variables naming one client's TLS files. */
interface TlsVariables {
  cert: string;
  key: string;
  ca: string;
}

const API_TLS: TlsVariables = { cert: 'API_TLS_CERT', key: 'API_TLS_KEY', ca: 'API_TLS_CA' };
const KAFKA_TLS: TlsVariables = { cert: 'KAFKA_TLS_CERT', key: 'KAFKA_TLS_KEY', ca: 'KAFKA_TLS_CA' };

/**
 * The TLS files, read and tried at start: a client reads them only when it first connects, where a
 * missing file or a key that is not the certificate's was a failure long after start-up, and a CA
 * bundle OpenSSL cannot read is silently ignored. Problems name the variable, not the path.
 */
function fileProblems(env: Env, names: TlsVariables): Problem[] {
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
  const cert = read(names.cert);
  const key = read(names.key);
  const ca = read(names.ca);
  const refuse = (variable: string, message: string, check: () => unknown): boolean => {
    const why = failure(check);
    if (why !== undefined) problems.push({ variable, message: `${message} ${why}` });
    return why === undefined;
  };
  const certOk =
    cert !== undefined && refuse(names.cert, 'is not a PEM certificate', () => createSecureContext({ cert }));
  const keyOk =
    key !== undefined &&
    refuse(names.key, 'is not an unencrypted PEM private key', () => createSecureContext({ key }));
  if (certOk && keyOk) {
    refuse(names.key, `is not the private key of ${names.cert}'s certificate`, () =>
      createSecureContext({ cert, key }),
    );
  }
  if (ca !== undefined) {
    refuse(names.ca, 'is not a PEM certificate bundle', () => {
      if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no BEGIN CERTIFICATE line');
      return new X509Certificate(ca);
    });
  }
  return problems;
}

/** The API_TLS_* files, and the scheme of API_BASE_URL they need: over http:// they would go unused. */
export function tlsProblems(env: Env): Problem[] {
  const set = ['API_TLS_CERT', 'API_TLS_KEY', 'API_TLS_CA'].filter((v) => (env[v] ?? '').trim() !== '');
  if (set.length === 0) return [];
  const problems = fileProblems(env, API_TLS);
  if (/^\s*http:/i.test(env.API_BASE_URL ?? '')) {
    problems.push({
      variable: 'API_BASE_URL',
      message: `must be an https:// URL when ${set.join(', ')} is set`,
    });
  }
  return problems;
}

const isSet = (env: Env, variable: string) => (env[variable] ?? '').trim() !== '';

/**
 * The KAFKA_TLS_* files, read and tried as the API's are. KAFKA_TLS_CERT and KAFKA_TLS_KEY go
 * together; any of them turns TLS on, so KAFKA_SSL=false beside one is a contradiction.
 */
export function kafkaTlsProblems(env: Env): Problem[] {
  const set = Object.values(KAFKA_TLS).filter((v) => isSet(env, v));
  if (set.length === 0) return [];
  const problems = fileProblems(env, KAFKA_TLS);
  if (isSet(env, KAFKA_TLS.cert) !== isSet(env, KAFKA_TLS.key)) {
    problems.push({
      variable: isSet(env, KAFKA_TLS.cert) ? KAFKA_TLS.key : KAFKA_TLS.cert,
      message: 'KAFKA_TLS_CERT and KAFKA_TLS_KEY go together',
    });
  }
  if (/^\s*(false|0|no|off)\s*$/i.test(env.KAFKA_SSL ?? '')) {
    problems.push({ variable: 'KAFKA_SSL', message: `must not be false when ${set.join(', ')} is set` });
  }
  return problems;
}
