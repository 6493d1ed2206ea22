import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, expect } from 'vitest';
import { ConfigError } from '../../src/errors.ts';

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
  const dir = await mkdtemp(join(tmpdir(), 'fraudlink-config-tls-'));
  const files = {
    dir,
    cert: join(dir, 'tls.crt'),
    key: join(dir, 'tls.key'),
    otherKey: join(dir, 'other.key'),
    encryptedKey: join(dir, 'encrypted.key'),
  };
  await Promise.all([
    writeFile(files.cert, mine.cert),
    writeFile(files.key, mine.private),
    writeFile(files.otherKey, other.private),
    writeFile(files.encryptedKey, encrypted),
  ]);
  return files;
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
