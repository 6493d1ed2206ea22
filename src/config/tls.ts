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

/**
 * The mutual-TLS files, read and tried at start: the API client reads them only at its first call,
 * where a missing file or a key that is not the certificate's was a failure long after start-up, and
 * a CA bundle OpenSSL cannot read is silently ignored. Problems name the variable, not the path.
 */
function fileProblems(env: Env): Problem[] {
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
  const cert = read('API_TLS_CERT');
  const key = read('API_TLS_KEY');
  const ca = read('API_TLS_CA');
  const refuse = (variable: string, message: string, check: () => unknown): boolean => {
    const why = failure(check);
    if (why !== undefined) problems.push({ variable, message: `${message} ${why}` });
    return why === undefined;
  };
  const certOk =
    cert !== undefined &&
    refuse('API_TLS_CERT', 'is not a PEM certificate', () => createSecureContext({ cert }));
  const keyOk =
    key !== undefined &&
    refuse('API_TLS_KEY', 'is not an unencrypted PEM private key', () => createSecureContext({ key }));
  if (certOk && keyOk) {
    refuse('API_TLS_KEY', "is not the private key of API_TLS_CERT's certificate", () =>
      createSecureContext({ cert, key }),
    );
  }
  if (ca !== undefined) {
    refuse('API_TLS_CA', 'is not a PEM certificate bundle', () => {
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
  const problems = fileProblems(env);
  if (/^\s*http:/i.test(env.API_BASE_URL ?? '')) {
    problems.push({
      variable: 'API_BASE_URL',
      message: `must be an https:// URL when ${set.join(', ')} is set`,
    });
  }
  return problems;
}
