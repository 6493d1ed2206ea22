import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { ConfigError, UpstreamConnectionError, UpstreamUnauthorizedError } from '../../src/errors.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.ts';

// Mutual TLS against the sandbox serving HTTPS and demanding a client certificate from a test CA.
let dir: string;
let sandbox: Sandbox;
let files: { caFile: string; certFile: string; keyFile: string; otherCertFile: string; otherKeyFile: string };

async function makeCa(name: string) {
  return generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true },
    ],
  });
}

async function issue(ca: { private: string; cert: string }, cn: string, server: boolean) {
  return generate([{ name: 'commonName', value: cn }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: server
      ? [
          { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] },
          { name: 'extKeyUsage', serverAuth: true },
        ]
      : [{ name: 'extKeyUsage', clientAuth: true }],
  });
}

beforeAll(async () => {
  const ca = await makeCa('fraudlink test CA');
  const rogueCa = await makeCa('someone else');
  const [server, client, rogue] = await Promise.all([
    issue(ca, '127.0.0.1', true),
    issue(ca, 'fraudlink client', false),
    issue(rogueCa, 'fraudlink client', false),
  ]);
  dir = await mkdtemp(join(tmpdir(), 'fraudlink-tls-'));
  files = {
    caFile: join(dir, 'ca.pem'),
    certFile: join(dir, 'client.pem'),
    keyFile: join(dir, 'client-key.pem'),
    otherCertFile: join(dir, 'rogue.pem'),
    otherKeyFile: join(dir, 'rogue-key.pem'),
  };
  await writeFile(files.caFile, ca.cert);
  await writeFile(files.certFile, client.cert);
  await writeFile(files.keyFile, client.private);
  await writeFile(files.otherCertFile, rogue.cert);
  await writeFile(files.otherKeyFile, rogue.private);
  sandbox = createSandbox({
    port: 0,
    alerts: 10,
    changesPerSec: 0,
    tls: { cert: server.cert, key: server.private, ca: ca.cert, requestClientCert: true },
  });
  await sandbox.start();
});

afterAll(async () => {
  await sandbox?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('mutual TLS', () => {
  it('succeeds with the client certificate, key and CA read from files', async () => {
    const { caFile, certFile, keyFile } = files;
    const client = createApiClient({
      baseUrl: sandbox.url,
      apiKey: 'sandbox-key',
      timeoutMs: 5000,
      tls: { caFile, certFile, keyFile },
    });
    try {
      expect(sandbox.url).toMatch(/^https:/);
      expect((await client.exportPage({})).rows).toHaveLength(10);
    } finally {
      await client.close();
    }
  });

  it.each([
    ['without a client certificate', () => ({ caFile: files.caFile })],
    [
      'with a certificate from another CA',
      () => ({ caFile: files.caFile, certFile: files.otherCertFile, keyFile: files.otherKeyFile }),
    ],
  ])('is refused %s', async (_what, tls) => {
    const client = createApiClient({
      baseUrl: sandbox.url,
      apiKey: 'sandbox-key',
      timeoutMs: 5000,
      tls: tls(),
    });
    try {
      const error = await client.exportPage({}, { retry: false }).catch((e: unknown) => e);
      // TLS 1.3 reports the refusal after the handshake: an alert when it is read in time, otherwise
      // the server simply closes the connection.
      expect([UpstreamUnauthorizedError, UpstreamConnectionError]).toContain((error as object).constructor);
    } finally {
      await client.close();
    }
  });

  it('does not trust a server certificate outside the configured CA', async () => {
    const client = createApiClient({ baseUrl: sandbox.url, apiKey: 'sandbox-key', timeoutMs: 5000 });
    try {
      const error = await client.exportPage({}, { retry: false }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamConnectionError);
      expect((error as Error).message).toMatch(/CERT|certificate/);
    } finally {
      await client.close();
    }
  });

  it('names the variable of a certificate file it cannot read', () => {
    const create = () =>
      createApiClient({
        baseUrl: sandbox.url,
        apiKey: 'k',
        timeoutMs: 1000,
        tls: { certFile: join(dir, 'missing.pem'), keyFile: files.keyFile },
      });
    expect(create).toThrow(ConfigError);
    expect(create).toThrow(/API_TLS_CERT: cannot read .*missing\.pem \(ENOENT\)/);
  });
});
