import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { call, exportPath } from './helpers.ts';

/** A file that is readable but holds no PEM. */
const notPem = fileURLToPath(new URL('../../package.json', import.meta.url));

/** Resolves with the first stdout line once it is complete. */
async function readyLine(cli: ReturnType<typeof runCli>): Promise<{ url: string; apiKeys: string[] }> {
  const { stdout } = cli.child;
  if (!stdout) throw new Error('no stdout');
  while (!cli.stdout().includes('\n')) {
    await new Promise<void>((resolve, reject) => {
      stdout.once('data', () => resolve());
      cli.exited.then((code) => reject(new Error(`exited ${code}: ${cli.stderr()}`)));
    });
  }
  return JSON.parse(cli.stdout().split('\n')[0] as string);
}

describe('fraudlink sandbox', () => {
  it('prints one ready JSON line, serves the API under a base path, logs JSON on stderr and exits 0 on SIGTERM', async () => {
    const cli = runCli(
      [
        'sandbox',
        '--port',
        '0',
        '--alerts',
        '40',
        '--api-key',
        'k1',
        '--api-key',
        'k2',
        '--base-path',
        '/api',
      ],
      {},
    );
    const ready = await readyLine(cli);
    expect(ready).toEqual({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/api$/),
      apiKeys: ['k1', 'k2'],
    });
    const page = await call(ready.url, exportPath({}), { key: 'k2' });
    expect(page.status).toBe(200);
    expect((page.body as { rows: unknown[] }).rows).toHaveLength(40);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(cli.stdout().trim().split('\n')).toHaveLength(1);
    const logs = cli
      .stderr()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logs).toContainEqual(expect.objectContaining({ msg: 'sandbox ready', component: 'sandbox' }));
  });

  it('applies faults given on the command line and stops on SIGINT with exit code 0', async () => {
    const cli = runCli(
      ['sandbox', '--port', '0', '--alerts', '5', '--fault', 'error-rate=1', '--fault', 'latency=1'],
      {},
    );
    const ready = await readyLine(cli);
    expect((await call(ready.url, exportPath({}), { key: 'sandbox-key' })).status).toBe(503);
    expect((await call(ready.url, '/__admin/faults')).body).toMatchObject({ errorRate: 1, latencyMs: 1 });
    cli.child.kill('SIGINT');
    expect(await cli.exited).toBe(0);
  });

  const bad: [string, string[]][] = [
    ['a negative alert count', ['--alerts', '-3']],
    ['a port that is not a number', ['--port', 'eighty']],
    ['an unknown fault', ['--fault', 'gremlins=1']],
    ['a rate above 1', ['--fault', 'error-rate=1.5']],
    ['a TLS certificate without its key', ['--tls-cert', '/nonexistent.pem']],
    ['an unknown flag', ['--colour']],
  ];
  for (const [what, args] of bad) {
    it(`exits 2 with a message for ${what}`, async () => {
      const cli = runCli(['sandbox', '--port', '0', '--alerts', '5', ...args], {});
      expect(await cli.exited).toBe(2);
      expect(cli.stderr()).toMatch(/\w/);
      expect(cli.stdout()).toBe('');
    });
  }

  // Each was taken as given, and an empty value read as unset: --host '' listened on all interfaces,
  // --tls-cert '' --tls-key '' served plain HTTP, --tls-ca '' asked for no client certificate; and
  // --cursor-param updatedAfter, which EXPORT_CURSOR_PARAM refuses, collided with the export's other
  // parameter.
  const empty = 'must not be empty';
  const refused: [string, string[], string][] = [
    ['--host', ['--host', ''], empty],
    ['--cursor-param', ['--cursor-param', ''], empty],
    [
      '--cursor-param',
      ['--cursor-param', 'updatedAfter'],
      "must not be updatedAfter, the export's other parameter",
    ],
    ['--api-key', ['--api-key', ' '], empty],
    // Accepted, and no client could send it: API_KEY refuses it, as it is no HTTP header value.
    ['--api-key', ['--api-key', 'tenant a'], 'must be printable ASCII without spaces'],
    ['--api-key', ['--api-key', 'clé'], 'must be printable ASCII without spaces'],
    ['--tls-cert', ['--tls-cert', '', '--tls-key', ''], empty],
    ['--tls-ca', ['--tls-ca', ''], empty],
  ];
  for (const [flag, args, problem] of refused) {
    it(`exits 2 naming ${flag} when it is given "${args[1]}", instead of serving`, async () => {
      const cli = runCli(['sandbox', '--port', '0', '--alerts', '5', ...args], {});
      const outcome = await Promise.race([cli.exited, readyLine(cli).then((ready) => ready.url)]);
      expect(outcome).toBe(2);
      expect(cli.stderr()).toContain(`option '${flag} <`);
      expect(cli.stderr()).toContain(problem);
      expect(cli.stdout()).toBe('');
    });
  }

  // Both were taken with their spaces: every request then got 401 (HTTP trims header values), and
  // ?cursor= was ignored (EXPORT_CURSOR_PARAM is trimmed, so the connector sends `cursor`). As
  // their variables are, they are trimmed.
  it('trims --api-key and --cursor-param as API_KEY and EXPORT_CURSOR_PARAM are trimmed', async () => {
    const cli = runCli(
      [
        'sandbox',
        '--port',
        '0',
        '--alerts',
        '30',
        '--page-size',
        '10',
        '--api-key',
        ' k1 ',
        '--cursor-param',
        ' after',
      ],
      {},
    );
    const ready = await readyLine(cli);
    expect(ready.apiKeys).toEqual(['k1']);
    const first = await call(ready.url, exportPath({}), { key: 'k1' });
    expect(first.status).toBe(200);
    const { rows, nextCursor } = first.body as { rows: { id: string }[]; nextCursor: string };
    const second = await call(ready.url, exportPath({ cursor: nextCursor }, 'after'), { key: 'k1' });
    const ids = (second.body as { rows: { id: string }[] }).rows.map((r) => r.id);
    expect(ids).toHaveLength(10);
    expect(ids).not.toContain(rows[0]?.id);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  });

  // Flags that only fail once the server listens: a usage error naming the flag, not a stack trace.
  const unusable: [string, string[], RegExp][] = [
    [
      'a host that does not resolve',
      ['--host', 'no.such.host.invalid', '--admin-token', 't0ken'],
      /^fraudlink: USAGE: --host no\.such\.host\.invalid: the name does not resolve/,
    ],
    [
      'a host that is not an address of this machine',
      ['--host', '192.0.2.1', '--admin-token', 't0ken'],
      /^fraudlink: USAGE: --host 192\.0\.2\.1: not an address of this machine/,
    ],
    [
      'a host beyond loopback without an admin token',
      ['--host', '0.0.0.0'],
      /^fraudlink: USAGE: --host 0\.0\.0\.0 is not loopback: \/__admin then needs a token \(--admin-token or SANDBOX_ADMIN_TOKEN\)/,
    ],
    [
      'a TLS certificate that is not PEM',
      ['--tls-cert', notPem, '--tls-key', notPem],
      /^fraudlink: USAGE: --tls-cert: /,
    ],
  ];
  for (const [what, args, message] of unusable) {
    it(`exits 2 with a usage error naming the flag for ${what}`, async () => {
      const cli = runCli(['sandbox', '--port', '0', '--alerts', '5', ...args], {});
      expect(await cli.exited).toBe(2);
      expect(cli.stderr()).toMatch(message);
      expect(cli.stderr()).not.toMatch(/unexpected failure|\n\s+at /);
      expect(cli.stdout()).toBe('');
    });
  }

  it('exits 2 with a usage error naming --port when the port is already in use', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => busy.close(() => resolve())));
    const { port } = busy.address() as AddressInfo;
    const cli = runCli(['sandbox', '--port', String(port), '--alerts', '5'], {});
    expect(await cli.exited).toBe(2);
    expect(cli.stderr()).toMatch(new RegExp(`^fraudlink: USAGE: --port ${port}: .*in use`));
    expect(cli.stderr()).not.toMatch(/unexpected failure|\n\s+at /);
  });
});
