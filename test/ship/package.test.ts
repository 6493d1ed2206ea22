import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { root } from './helm.ts';
import { moduleOf, reachableModules, srcModules } from './modules.ts';

interface LockedPackage {
  dev?: boolean;
  engines?: { node?: string };
}

/** The lowest Node a `>=x.y.z` range (or `>= x`) allows, as [major, minor, patch]; undefined for other forms. */
function floorOf(range: string): [number, number, number] | undefined {
  const match = /^>=\s*(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?$/.exec(range.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2]) || 0, Number(match[3]) || 0];
}

const atLeast = (a: number[], b: number[]) => {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
};

describe('the package', () => {
  it('asks for a Node that every runtime dependency installed with it accepts (engines)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
    const ours = floorOf(pkg.engines.node);
    expect(ours, pkg.engines.node).toBeDefined();
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, LockedPackage>;
    };
    const above = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !p.dev && p.engines?.node !== undefined)
      .flatMap(([path, p]) => {
        const floor = floorOf(p.engines?.node ?? '');
        return floor && !atLeast(ours ?? [0, 0, 0], floor) ? [`${path} ${p.engines?.node}`] : [];
      });
    expect(above).toEqual([]);
  });

  it('packs only the modules its bin and exports load, and all of them', async () => {
    // dist/dev and dist/stack (`npm start`'s pipeline, the local Kafka stack) were published although
    // nothing the package runs loads them; the repository runs them from src/. The pack is of a dist/
    // with every module of src/, as any build (this one or an older one left in place) may hold.
    const dir = mkdtempSync(join(tmpdir(), 'fraudlink-pack-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const outputs = (module: string) => ['.js', '.js.map', '.d.ts'].map((ext) => `dist/${module}${ext}`);
    for (const file of srcModules().flatMap(outputs)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), '');
    }
    for (const path of ['package.json', 'bin', 'schemas'])
      cpSync(join(root, path), join(dir, path), { recursive: true });
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: dir,
    });
    const packed = (JSON.parse(stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
    const reachable = reachableModules();
    const dist = packed.filter((p) => p.startsWith('dist/'));
    expect(dist.filter((p) => !reachable.has(moduleOf(p)))).toEqual([]);
    expect([...reachable].flatMap(outputs).filter((p) => !dist.includes(p))).toEqual([]);
    expect(reachable).toContain('connector/page-worker'); // loaded as a worker, by URL
    expect(packed).toContain('bin/fraudlink.js');
    expect(packed.filter((p) => p.startsWith('schemas/'))).not.toEqual([]);
  });
});
