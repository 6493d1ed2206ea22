import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELM_VERSION, root } from './helm.ts';

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const ciRun = readFileSync(join(root, '.ci', 'run'), 'utf8');

describe('what npm test needs', () => {
  it('lists Go, which builds helm for the chart tests, among the README requirements', () => {
    const requirements = readme.slice(readme.indexOf('npm install && npm test'), readme.indexOf('## '));
    const [, minor] = /^(v\d+\.\d+)\./.exec(HELM_VERSION) ?? [];
    expect(requirements).toMatch(/needs Go/);
    expect(requirements).toContain(`helm ${minor}`);
    expect(requirements).toContain('GOTOOLCHAIN=auto');
  });

  it('.ci/run takes a Go from 1.21 on, which fetches the toolchain helm asks for, and not Debian 12’s 1.19', () => {
    const helpers = ciRun.split('\n').filter((l) => /^(go_minor|recent_go)\(\)/.test(l));
    expect(helpers).toHaveLength(2);
    expect(ciRun).toMatch(/^export GOTOOLCHAIN=auto$/m);
    const dir = mkdtempSync(join(tmpdir(), 'fraudlink-ci-go-'));
    try {
      // PATH is this folder alone, so no Go of the machine's is found: a stub go, and sed.
      symlinkSync(['/usr/bin/sed', '/bin/sed'].find((f) => existsSync(f)) as string, join(dir, 'sed'));
      const go = join(dir, 'go');
      const recent = (version: string | undefined) => {
        if (version === undefined) rmSync(go, { force: true });
        else writeFileSync(go, `#!/bin/sh\necho ${version}\n`, { mode: 0o755 });
        const script = `${helpers.join('\n')}\nrecent_go && echo yes || echo no`;
        // --norc: Debian's bash reads ~/.bashrc, which may put another Go on PATH, when stdin is a socket.
        return execFileSync('/bin/bash', ['--norc', '-c', script], {
          env: { PATH: dir },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
          .toString()
          .trim();
      };
      expect([recent('go1.19.8'), recent('go1.20'), recent(undefined)]).toEqual(['no', 'no', 'no']);
      expect([recent('go1.21.0'), recent('go1.23.5'), recent('go1.26.8')]).toEqual(['yes', 'yes', 'yes']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
