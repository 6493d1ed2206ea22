import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './helm.ts';
import { configVariables } from './variables.ts';

const guide = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');

describe('operator guide', () => {
  it('documents every environment variable the configuration defines', () => {
    expect(configVariables.filter((v) => !guide.includes(`\`${v}\``))).toEqual([]);
  });

  it('lists every metric the code declares', () => {
    const sources = ['src/connector/metrics.ts', 'src/verifier/metrics.ts', 'src/table/metrics.ts'].map((f) =>
      readFileSync(join(root, f), 'utf8'),
    );
    const metrics = sources.flatMap((s) =>
      [...s.matchAll(/name: '(fraudlink_[a-z0-9_]+)'/g)].map((m) => m[1]),
    );
    expect(metrics.length).toBeGreaterThan(15);
    expect(metrics.filter((m) => !guide.includes(`\`${m}\``))).toEqual([]);
  });

  it('links only to files and headings that exist', () => {
    const anchors = new Set(
      [...guide.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        (m[1] as string)
          .toLowerCase()
          .replace(/[^\p{L}\p{N} -]/gu, '')
          .replace(/ /g, '-'),
      ),
    );
    const broken: string[] = [];
    for (const [, target] of guide.matchAll(/\]\(([^)\s]+)\)/g)) {
      const [path, anchor] = (target as string).split('#');
      if (path) {
        if (/^https?:/.test(path)) continue;
        if (!existsSync(join(root, 'docs', path))) broken.push(target as string);
      } else if (anchor && !anchors.has(anchor)) {
        broken.push(target as string);
      }
    }
    expect(broken).toEqual([]);
  });
});
