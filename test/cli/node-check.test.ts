import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../../bin/fraudlink.js', import.meta.url));

/** Runs the launcher on this Node, made to report `version` as its own before the launcher loads. */
function launchAs(version: string) {
  const pretend = `Object.defineProperty(process.versions, 'node', { value: '${version}' });`;
  return spawnSync(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(pretend)}`, bin, '--help'],
    {
      encoding: 'utf8',
    },
  );
}

describe('bin/fraudlink.js on an older Node', () => {
  it('says in one line which Node it needs and which it found, and exits 2', () => {
    const run = launchAs('20.20.2');
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('fraudlink needs Node 22.19 or later; this is Node 20.20.2\n');
  });

  it('refuses a 22 older than 22.19 and runs on 22.19', () => {
    expect(launchAs('22.18.0').status).toBe(2);
    const run = launchAs('22.19.0');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: fraudlink');
  });
});
