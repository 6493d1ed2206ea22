// The container image's runtime layout (Dockerfile, stage `runtime`), assembled in a folder without
// Docker: production dependencies installed from the lockfile, the compiled code, the Avro schemas
// and the launcher. test/ship/dockerfile.test.ts checks that the Dockerfile takes the same steps.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../stack/paths.ts';

/** What the runtime stage copies from the repository or the build stage, beside node_modules. */
export const RUNTIME_PATHS = ['package.json', 'dist', 'schemas', 'bin'] as const;

/** The runtime stage's install: the locked production tree, without install scripts. */
export const PRODUCTION_INSTALL = ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'];

/** Removed from package.json first, so `npm ci` does not ask for dev-only packages (see Dockerfile). */
export const PRODUCTION_PKG_DELETE = ['pkg', 'delete', 'devDependencies'];

export interface LayoutReport {
  dir: string;
  packages: number;
  nodeModulesBytes: number;
  installMs: number;
  buildMs: number;
}

interface RunResult {
  code: number | null;
  output: string;
}

/** Runs a command to its end, keeping its output for the error message. */
export function run(command: string, args: string[], cwd: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function mustRun(what: string, command: string, args: string[], cwd: string): Promise<void> {
  const { code, output } = await run(command, args, cwd);
  if (code !== 0) throw new Error(`${what} failed (exit ${code}):\n${output.trim().slice(-4000)}`);
}

/** npm as the running npm script uses it (npm_execpath), else the one on PATH. */
function npm(args: string[]): [string, string[]] {
  const npmCli = process.env.npm_execpath;
  return npmCli?.endsWith('.js') ? [process.execPath, [npmCli, ...args]] : ['npm', args];
}

function sizeOf(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

/** Lockfile entries npm marks dev-only: none of them may reach the runtime layout. */
export function devOnlyPackages(lockfile: string): string[] {
  const lock = JSON.parse(readFileSync(lockfile, 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith('node_modules/') && entry.dev === true)
    .map(([path]) => path);
}

function installedPackages(dir: string): number {
  const lock = join(dir, 'node_modules', '.package-lock.json');
  if (!existsSync(lock)) return 0;
  const { packages } = JSON.parse(readFileSync(lock, 'utf8')) as { packages: Record<string, unknown> };
  return Object.keys(packages).length;
}

/**
 * Builds the code from src/ into `dir/dist` (as the build stage does) and installs the production
 * dependencies into `dir`, then checks that no dev-only package came along.
 */
export async function assembleRuntimeLayout(dir: string): Promise<LayoutReport> {
  mkdirSync(dir, { recursive: true });
  const root = projectRoot;
  let started = performance.now();
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  await mustRun(
    'compiling src/',
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')],
    root,
  );
  const buildMs = performance.now() - started;

  for (const file of ['package.json', 'package-lock.json', 'schemas', 'bin']) {
    cpSync(join(root, file), join(dir, file), { recursive: true });
  }
  started = performance.now();
  await mustRun('npm pkg delete devDependencies', ...npm(PRODUCTION_PKG_DELETE), dir);
  await mustRun(`npm ${PRODUCTION_INSTALL.join(' ')}`, ...npm(PRODUCTION_INSTALL), dir);
  const installMs = performance.now() - started;

  const leaked = devOnlyPackages(join(root, 'package-lock.json')).filter((p) => existsSync(join(dir, p)));
  if (leaked.length > 0) throw new Error(`dev-only packages in the runtime layout: ${leaked.join(', ')}`);
  for (const path of RUNTIME_PATHS) {
    if (!existsSync(join(dir, path))) throw new Error(`runtime layout lacks ${path}`);
  }
  return {
    dir,
    packages: installedPackages(dir),
    nodeModulesBytes: sizeOf(join(dir, 'node_modules')),
    installMs,
    buildMs,
  };
}
