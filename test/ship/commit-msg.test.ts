import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const hooks = fileURLToPath(new URL('../../.githooks', import.meta.url));
const repo = mkdtempSync(join(tmpdir(), 'fraudlink-hook-'));
const git = (...args: string[]) => spawnSync('git', args, { cwd: repo, encoding: 'utf8' });
execFileSync('git', ['init', '-q'], { cwd: repo });
const settings: [string, string][] = [
  ['core.hooksPath', hooks],
  ['user.name', 'Test'],
  ['user.email', 'test@example.invalid'],
  ['commit.gpgsign', 'false'],
];
for (const [key, value] of settings) execFileSync('git', ['config', key, value], { cwd: repo });
afterAll(() => rmSync(repo, { recursive: true, force: true }));

const commit = (message: string) => git('commit', '-q', '--allow-empty', '-m', message);

describe('the commit-msg hook', () => {
  it('takes a subject of 72 characters with a body after a blank line', () => {
    const run = commit(`${'a'.repeat(72)}\n\nWhy it was needed.`);
    expect(run.status, run.stderr).toBe(0);
  });

  it('refuses a subject over 72 characters, saying how long it is', () => {
    const run = commit('b'.repeat(73));
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('the subject has 73 characters; at most 72');
  });

  it('counts characters, not bytes', () => {
    expect(commit('é'.repeat(72)).status).toBe(0);
  });

  it('refuses a body that does not start after a blank line', () => {
    const run = commit('Fix the thing\nbecause');
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('leave the second line blank');
  });
});

describe('npm install', () => {
  it('points git at the hooks folder (the prepare script)', async () => {
    const { default: pkg } = await import('../../package.json', { with: { type: 'json' } });
    expect(pkg.scripts.prepare).toContain('git config core.hooksPath .githooks');
  });
});
