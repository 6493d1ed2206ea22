import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StackError } from '../errors.ts';

const run = promisify(execFile);

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const e = err as { code?: string; stderr?: string };
    if (e.code === 'ENOENT') {
      throw new StackError('openssl is not installed; the secured broker needs it for its test certificates');
    }
    throw new StackError(`openssl ${args[0]} failed: ${e.stderr ?? err}`, { cause: err });
  }
}

/** A PEM certificate and its unencrypted PKCS#8 private key, as files. */
export interface CertFiles {
  cert: string;
  key: string;
}

/** A test certificate authority: its own certificate signs the others. */
async function createCa(dir: string, name: string): Promise<CertFiles> {
  const files = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  await openssl(
    ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', files.key],
    dir,
  );
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      files.key,
      '-subj',
      `/CN=${name}`,
      '-days',
      '2',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      files.cert,
    ],
    dir,
  );
  return files;
}

/**
 * A certificate signed by `ca`: for a server, `altNames` are its subjectAltName entries
 * (`DNS:localhost`, `IP:127.0.0.1`); without them, a client certificate.
 */
async function issue(dir: string, name: string, ca: CertFiles, altNames?: string[]): Promise<CertFiles> {
  const files = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await openssl(
    ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', files.key],
    dir,
  );
  await openssl(['req', '-new', '-key', files.key, '-subj', `/CN=${name}`, '-out', csr], dir);
  writeFileSync(
    ext,
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      altNames ? 'extendedKeyUsage=serverAuth' : 'extendedKeyUsage=clientAuth',
      ...(altNames ? [`subjectAltName=${altNames.join(',')}`] : []),
      '',
    ].join('\n'),
  );
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      ext,
      '-out',
      files.cert,
    ],
    dir,
  );
  return files;
}

export interface TestCertificates {
  /** The CA that signed every certificate below but `foreignCa`'s. */
  ca: CertFiles;
  /** The broker's certificate, for DNS:localhost and IP:127.0.0.1. */
  server: CertFiles;
  /** A broker certificate from the same CA for another host name only (`broker.invalid`). */
  otherName: CertFiles;
  /** A client certificate (CN=fraudlink-client), for mutual TLS. */
  client: CertFiles;
  /** A CA that signed none of these: trusting it alone must fail verification. */
  foreignCa: CertFiles;
}

/** Generates a fresh CA and the certificates the secured broker and its tests need, in `dir`. */
export async function createTestCertificates(dir: string): Promise<TestCertificates> {
  mkdirSync(dir, { recursive: true });
  const [ca, foreignCa] = await Promise.all([
    createCa(dir, 'fraudlink-test-ca'),
    createCa(dir, 'foreign-ca'),
  ]);
  const server = await issue(dir, 'localhost', ca, ['DNS:localhost', 'IP:127.0.0.1']);
  const otherName = await issue(dir, 'broker.invalid', ca, ['DNS:broker.invalid']);
  const client = await issue(dir, 'fraudlink-client', ca);
  return { ca, server, otherName, client, foreignCa };
}

/** A PEM keystore file as Kafka reads one (`ssl.keystore.type=PEM`): the key, then the chain. */
export function writePemKeystore(file: string, files: CertFiles): string {
  writeFileSync(file, `${readFileSync(files.key, 'utf8')}${readFileSync(files.cert, 'utf8')}`);
  return file;
}
