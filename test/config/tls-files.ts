import { generateKeyPairSync } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, expect } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { writeTempFiles } from '../helpers/tls.ts';

export interface TlsFiles {
  dir: string;
  /** A self-signed client certificate, which also serves as a CA bundle. */
  cert: string;
  key: string;
  /** The key of another certificate. */
  otherKey: string;
  /** A key behind a passphrase, which fraudlink cannot use. */
  encryptedKey: string;
}

/** PEM files for the API_TLS_* variables, in a new temporary folder the caller removes. */
export async function writeTlsFiles(): Promise<TlsFiles> {
  const subject = [{ name: 'commonName', value: 'fraudlink client' }];
  const [mine, other] = await Promise.all([
    generate(subject, { keyType: 'ec', algorithm: 'sha256' }),
    generate(subject, { keyType: 'ec', algorithm: 'sha256' }),
  ]);
  const encrypted = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pw' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  }).privateKey;
  const { dir, paths } = await writeTempFiles('fraudlink-config-tls-', {
    cert: ['tls.crt', mine.cert],
    key: ['tls.key', mine.private],
    otherKey: ['other.key', other.private],
    encryptedKey: ['encrypted.key', encrypted],
  });
  return { dir, ...paths };
}

/**
 * The problems `load` throws (a ConfigError), each message without its reason in brackets; the whole
 * message must hold none of `hidden` (paths, keys, secrets).
 */
export function problemsHiding(
  load: () => unknown,
  hidden: string[],
): { variable: string; message: string }[] {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const { message, problems } = err as ConfigError;
    for (const text of hidden) expect(message).not.toContain(text);
    return problems.map((p) => ({ variable: p.variable, message: p.message.replace(/ \(.*\)$/, '') }));
  }
  throw new Error('expected a ConfigError');
}

/** writeTlsFiles' files for the tests of one file: written before them, removed after them. */
export function useTlsFiles(): TlsFiles {
  const files = {} as TlsFiles;
  beforeAll(async () => {
    Object.assign(files, await writeTlsFiles());
  });
  afterAll(async () => {
    await rm(files.dir, { recursive: true, force: true });
  });
  return files;
}
