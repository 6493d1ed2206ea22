// Which modules of src/ (compiled to dist/) the package's entry points load: the bin launcher, main
// and exports, followed through relative imports (static, dynamic, type-only: a shipped .d.ts needs
// those too) and worker URLs. Modules are named by their path under src/ without extension.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { root } from './helm.ts';

const srcDir = join(root, 'src');

/** `import … from './x.ts'`, `export … from`, `import './x.ts'`, `import('./x.ts')`, `new URL(`./x${ext}`)`. */
const specifiers = /(?:\bfrom\s*|\bimport\s*\(?\s*|\bnew URL\(\s*)[`'"](\.{1,2}\/[^`'"$]+)/g;

/** A dist/ or src/ file's module: its path under that folder without the extension. */
export function moduleOf(path: string): string {
  return path.replace(/^(dist|src)\//, '').replace(/\.(js|js\.map|d\.ts|d\.ts\.map|ts)$/, '');
}

/** Every module of src/. */
export function srcModules(): string[] {
  return readdirSync(srcDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => moduleOf(f.split('\\').join('/')));
}

function importsOf(module: string): string[] {
  const text = readFileSync(join(srcDir, `${module}.ts`), 'utf8');
  return [...text.matchAll(specifiers)]
    .map((m) => moduleOf(posix.join(posix.dirname(module), m[1] as string)))
    .filter((m) => existsSync(join(srcDir, `${m}.ts`)));
}

/** The modules package.json's bin, main, types and exports load, directly or through others. */
export function reachableModules(): Set<string> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  const targets = (v: unknown): string[] =>
    typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(targets) : [];
  const distFiles = [...targets(pkg.main), ...targets(pkg.types), ...targets(pkg.exports)];
  for (const bin of targets(pkg.bin)) {
    const text = readFileSync(join(root, bin), 'utf8');
    for (const [, spec] of text.matchAll(specifiers)) {
      distFiles.push(relative(root, join(dirname(join(root, bin)), spec as string)));
    }
  }
  const pending = distFiles.map((f) => moduleOf(posix.normalize(f.split('\\').join('/'))));
  const reached = new Set<string>();
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (reached.has(next)) continue;
    reached.add(next);
    pending.push(...importsOf(next));
  }
  return reached;
}
