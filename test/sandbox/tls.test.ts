import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { issue, type Pem } from '../helpers/tls.ts';
import { startSandbox } from './helpers.ts';

let ca: Pem;
let server: Pem;
let client: Pem;

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

describe('fraudlink sandbox TLS flags', () => {
  let dir: string;
  const file = async (name: string, text: string) => {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fraudlink-sandbox-tls-'));
    return () => rm(dir, { recursive: true, force: true });
  });

  it('exits 2 with a usage error naming the flag for a key, a CA or a key pair it cannot use', async () => {
    const cert = await file('cert.pem', server.cert);
    const junk = await file('junk.pem', 'not a PEM file\n');
    const otherKey = await file('other-key.pem', client.private);
    const cases: [string[], RegExp][] = [
      [['--tls-cert', cert, '--tls-key', junk], /^fraudlink: USAGE: --tls-key: /],
      [['--tls-cert', cert, '--tls-key', otherKey], /^fraudlink: USAGE: --tls-key: .*--tls-cert/],
      [
        ['--tls-cert', cert, '--tls-key', await file('key.pem', server.private), '--tls-ca', junk],
        /^fraudlink: USAGE: --tls-ca: /,
      ],
    ];
    for (const [args, message] of cases) {
      const cli = runCli(['sandbox', '--port', '0', '--alerts', '3', ...args], {});
      expect(await cli.exited).toBe(2);
      expect(cli.stderr()).toMatch(message);
      expect(cli.stdout()).toBe('');
    }
  });
});
