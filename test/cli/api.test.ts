import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { sendJson, serve, type TestServer } from '../api/servers.ts';

// `fraudlink api` run as a child process, its stdout piped, against the sandbox started here.
let sandbox: Sandbox;
let broken: TestServer;

beforeAll(async () => {
  sandbox = createSandbox({
    port: 0,
    apiKeys: ['cli-key'],
    alerts: 60,
    seed: 5,
    changesPerSec: 0,
    pageSize: 25,
  });
  await sandbox.start();
  // Every answer is a 200 whose export envelope is broken.
  broken = await serve((_req, res) => sendJson(res, 200, { rows: 'not a list' }));
});

afterAll(async () => {
  await sandbox?.stop();
  await broken?.close();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const childEnv = (env: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  API_BASE_URL: sandbox.url,
  API_KEY: 'cli-key',
  LOG_LEVEL: 'error',
  ...env,
});

function fraudlink(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['src/cli/main.ts', 'api', ...args],
      { env: childEnv(env), maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const lines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('fraudlink api', { timeout: 60_000 }, () => {
  it('prints help naming the exit codes for the command and each subcommand', async () => {
    const runs = await Promise.all(
      [[], ['sent-search'], ['received-search'], ['get'], ['export'], ['verify']].map((sub) =>
        fraudlink([...sub, '--help']),
      ),
    );
    for (const run of runs) {
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Exit codes: 0 done');
      expect(run.stdout).toContain('6 upstream unavailable');
      expect(run.stdout).toContain('143 or 130 stopped by SIGTERM or SIGINT');
    }
    expect(runs[1]?.stdout).toContain('--author');
    expect(runs[2]?.stdout).not.toContain('--author');
  });

  it('walks the whole export feed with --all, one raw row per line when piped', async () => {
    const run = await fraudlink(['export', '--all']);
    expect(run.code).toBe(0);
    const rows = lines(run.stdout);
    expect(rows.map((r) => String(r.id)).sort()).toEqual(
      sandbox
        .currentRows()
        .map((r) => String(r.id))
        .sort(),
    );
    expect(run.stderr).toBe('');
  });

  // Regression: it printed the first page again and again, without end (64,670 lines in 3 s).
  it('stops --all with exit 2 naming EXPORT_CURSOR_PARAM, the first page printed once, when the upstream reads its cursor under another name', async () => {
    const run = await fraudlink(['export', '--all'], { EXPORT_CURSOR_PARAM: 'token' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/CONFIG_INVALID: .*EXPORT_CURSOR_PARAM: .*query parameter "token"/);
    const first = sandbox.currentRows().slice(0, 25);
    expect(lines(run.stdout)).toEqual(first);
  });

  it('prints one export page with its nextCursor as a single JSON line, and continues from --cursor', async () => {
    const first = await fraudlink(['export']);
    expect(first.code).toBe(0);
    const [page] = lines(first.stdout) as [{ rows: unknown[]; nextCursor: string }];
    expect(page.rows).toHaveLength(25);
    const next = await fraudlink(['export', '--cursor', page.nextCursor]);
    const [second] = lines(next.stdout) as [{ rows: { id: unknown }[] }];
    expect(second.rows[0]?.id).not.toEqual((page.rows[0] as { id: unknown }).id);
  });

  it('prints a search page, or every matching alert with --all', async () => {
    const one = await fraudlink(['received-search', '--page-size', '4']);
    expect(one.code).toBe(0);
    const [page] = lines(one.stdout) as [{ totalAlerts: number; alerts: unknown[] }];
    expect(page.alerts).toHaveLength(4);
    const all = await fraudlink(['received-search', '--all', '--page-size', '4']);
    expect(lines(all.stdout)).toHaveLength(page.totalAlerts);
  });

  it('passes the filters through to the search', async () => {
    const run = await fraudlink([
      'sent-search',
      '--all',
      '--qualification',
      'CONFIRMED',
      '--page-size',
      '10',
    ]);
    expect(run.code).toBe(0);
    const alerts = lines(run.stdout);
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.every((a) => a.qualification === 'CONFIRMED' && Array.isArray(a.myReports))).toBe(true);
  });

  it('gets one alert and verifies a payee', async () => {
    const row = sandbox.currentRows().find((r) => /^(DE|AT|NL)/.test(String(r.iban)))!;
    const [got, verified] = await Promise.all([
      fraudlink(['get', String(row.id)]),
      fraudlink(['verify', '--iban', String(row.iban), '--name', sandbox.holderName(String(row.iban))]),
    ]);
    expect(got.code).toBe(0);
    expect(lines(got.stdout)[0]).toMatchObject({ id: row.id, iban: row.iban });
    expect(verified.code).toBe(0);
    expect(lines(verified.stdout)).toEqual([{ partyNameMatch: 'MTCH' }]);
  });

  it.each([
    ['a page that is not a positive integer', ['received-search', '--page', '0']],
    ['an unknown qualification', ['sent-search', '--qualification', 'MAYBE']],
    ['an instant that is not ISO-8601', ['export', '--updated-after', 'yesterday']],
    ['an instant on a day that does not exist', ['export', '--updated-after', '2026-02-31T00:00:00Z']],
    ['a bare number as an instant', ['sent-search', '--updated-from', '5']],
    ['an instant without a zone', ['received-search', '--updated-to', '2026-01-01T00:00:00']],
    ['both a cursor and an instant', ['export', '--cursor', 'x', '--updated-after', '2026-01-01T00:00:00Z']],
    ['an IBAN with a bad checksum', ['verify', '--iban', 'DE89370400440532013001', '--name', 'A']],
    ['a missing name', ['verify', '--iban', 'DE89370400440532013000']],
    ['an unknown option', ['get', '1', '--verbose']],
    ['an alert id that is a dot segment', ['get', '..']],
    ['a filter of the other search', ['received-search', '--bic', 'X']],
  ])('exits 2 on %s', async (_what, args) => {
    const run = await fraudlink(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/error:/);
  });

  it('exits 2 naming the missing variables when the configuration is incomplete', async () => {
    const run = await fraudlink(['export'], { API_KEY: '', API_BASE_URL: 'ftp://nowhere' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('API_KEY: is required');
    expect(run.stderr).toContain('API_BASE_URL: must be an http(s) URL');
  });

  it('exits 3 when the upstream refuses the key, without printing it', async () => {
    const run = await fraudlink(['export'], { API_KEY: 'wrong-key-42' });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('UPSTREAM_UNAUTHORIZED');
    expect(run.stderr).not.toContain('wrong-key-42');
  });

  it('exits 5 when the upstream rejects the request', async () => {
    const run = await fraudlink(['get', 'no-such-alert']);
    expect(run.code).toBe(5);
    expect(run.stderr).toContain('UPSTREAM_NOT_FOUND');
  });

  it('exits 6 when the upstream stays unavailable through the retries', async () => {
    sandbox.setFaults({ errorRate: 1 });
    try {
      const run = await fraudlink(['received-search', '--retries', '1'], { LOG_LEVEL: 'warn' });
      expect(run.code).toBe(6);
      expect(run.stderr).toContain('UPSTREAM_UNAVAILABLE');
      expect(run.stderr).toContain('upstream call failed, retrying');
    } finally {
      sandbox.setFaults({ errorRate: 0 });
    }
  });

  it('exits 7 when the upstream answers a body of the wrong shape', async () => {
    const run = await fraudlink(['export'], { API_BASE_URL: broken.url });
    expect(run.code).toBe(7);
    expect(run.stderr).toContain('UPSTREAM_BAD_RESPONSE');
  });

  describe('a long walk', () => {
    const startWalk = async (env: Record<string, string> = {}) => {
      // Slow pages, so that the walk is still running when the test acts on it.
      sandbox.setFaults({ latencyMs: 100 });
      const child = spawn(process.execPath, ['src/cli/main.ts', 'api', 'export', '--all'], {
        env: childEnv(env),
      });
      // 'close', not 'exit': every line the child wrote to stderr has been read by then.
      const exited = once(child, 'close') as Promise<[number | null, string | null]>;
      await once(child.stdout, 'data');
      return { child, exited };
    };

    // It exited 0, and a script took the rows printed so far for the whole feed.
    it('stops on SIGTERM with exit code 143, saying that the output is incomplete', async () => {
      try {
        const { child, exited } = await startWalk({ LOG_LEVEL: 'warn' });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        child.kill('SIGTERM');
        expect(await exited).toEqual([143, null]);
        expect(stderr).toContain('"signal":"SIGTERM","msg":"stopped by SIGTERM: the output is incomplete"');
      } finally {
        sandbox.setFaults({ latencyMs: 0 });
      }
    });

    it('ends quietly with exit code 0 when its reader goes away', async () => {
      try {
        const { child, exited } = await startWalk();
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        child.stdout.destroy();
        expect(await exited).toEqual([0, null]);
        expect(stderr).toBe('');
      } finally {
        sandbox.setFaults({ latencyMs: 0 });
      }
    });
  });
});
