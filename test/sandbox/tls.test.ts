import { type CertificateExtension, generate } from 'selfsigned';
import { Agent, request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from './helpers.ts';

type Pem = { cert: string; private: string };
let ca: Pem;
let server: Pem;
let client: Pem;

async function issue(issuer: Pem | undefined, cn: string, usage: 'ca' | 'server' | 'client'): Promise<Pem> {
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

beforeAll(async () => {
  ca = await issue(undefined, 'sandbox test CA', 'ca');
  [server, client] = await Promise.all([issue(ca, '127.0.0.1', 'server'), issue(ca, 'client', 'client')]);
});

const exportWith = async (url: string, connect: Record<string, unknown>) => {
  const dispatcher = new Agent({ connect });
  try {
    const res = await request(`${url}/sharing/v1/alerts/export`, {
      headers: { 'x-api-key': 'sandbox-key' },
      dispatcher,
    });
    await res.body.text();
    return res.statusCode;
  } finally {
    await dispatcher.close();
  }
};

describe('TLS', () => {
  it('serves HTTPS and prints an https url', async () => {
    const sandbox = await startSandbox({ alerts: 3, tls: { cert: server.cert, key: server.private } });
    expect(sandbox.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(await exportWith(sandbox.url, { ca: ca.cert })).toBe(200);
  });

  it('with a CA, requires a client certificate it signed on every connection', async () => {
    const sandbox = await startSandbox({
      alerts: 3,
      tls: { cert: server.cert, key: server.private, ca: ca.cert, requestClientCert: true },
    });
    expect(await exportWith(sandbox.url, { ca: ca.cert, cert: client.cert, key: client.private })).toBe(200);
    await expect(exportWith(sandbox.url, { ca: ca.cert })).rejects.toThrow();
    expect(sandbox.requestLog()).toHaveLength(1);
  });
});
