import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './helm.ts';

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
});
