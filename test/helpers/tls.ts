import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:tls';
import { type CertificateExtension, generate } from 'selfsigned';
import { onTestFinished } from 'vitest';

export type Pem = { cert: string; private: string };

/** A certificate for `usage`, signed by `issuer` (self-signed without one); a server one is for 127.0.0.1. */
export async function issue(
  issuer: Pem | undefined,
  cn: string,
  usage: 'ca' | 'server' | 'client',
): Promise<Pem> {
  const extensions: CertificateExtension[] =
    usage === 'ca'
      ? [
          { name: 'basicConstraints', cA: true, critical: true },
          { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true },
        ]
      : usage === 'server'
        ? [
            { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] },
            { name: 'extKeyUsage', serverAuth: true },
          ]
        : [{ name: 'extKeyUsage', clientAuth: true }];
  return generate([{ name: 'commonName', value: cn }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions,
    ...(issuer && { ca: { key: issuer.private, cert: issuer.cert } }),
  });
}

/**
 * Each text written to a file of the given name in a new temporary folder (its name starting with
 * `prefix`), which the caller removes; `paths` holds each file's path under its key.
 */
export async function writeTempFiles<K extends string>(
  prefix: string,
  contents: Record<K, [name: string, text: string]>,
): Promise<{ dir: string; paths: Record<K, string> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const entries = Object.entries(contents) as [K, [string, string]][];
  await Promise.all(entries.map(([, [name, text]]) => writeFile(join(dir, name), text)));
  const paths = Object.fromEntries(entries.map(([key, [name]]) => [key, join(dir, name)]));
  return { dir, paths: paths as Record<K, string> };
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate it signed, as PEM files too. */
export async function testPki() {
  const ca = await issue(undefined, 'fraudlink test CA', 'ca');
  const [server, client, otherCa] = await Promise.all([
    issue(ca, '127.0.0.1', 'server'),
    issue(ca, 'fraudlink client', 'client'),
    issue(undefined, 'another CA', 'ca'),
  ]);
  const { dir, paths: files } = await writeTempFiles('fraudlink-pki-', {
    ca: ['ca.crt', ca.cert],
    otherCa: ['other-ca.crt', otherCa.cert],
    clientCert: ['client.crt', client.cert],
    clientKey: ['client.key', client.private],
  });
  return { ca, server, client, files, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A TLS front for the plain HTTP service at `target` (the shared schema registry): TLS ends here with
 * `server`'s certificate, and the bytes go on to the target as they are. With `clientCa`, it requires
 * a client certificate that CA signed (mutual TLS). Returns the https:// URL of the same path.
 */
export async function tlsProxy(target: string, server: Pem, clientCa?: string): Promise<string> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  const proxy = createServer(
    {
      cert: server.cert,
      key: server.private,
      ...(clientCa && { ca: clientCa, requestCert: true, rejectUnauthorized: true }),
    },
    (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      const onward = connect(Number(upstream.port), upstream.hostname);
      socket.pipe(onward).pipe(socket);
      const end = () => {
        socket.destroy();
        onward.destroy();
      };
      socket.on('error', end);
      onward.on('error', end);
    },
  );
  proxy.on('tlsClientError', () => {});
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  onTestFinished(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => proxy.close(() => resolve()));
  });
  const { port } = proxy.address() as AddressInfo;
  return `https://127.0.0.1:${port}${upstream.pathname}`;
}
