import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { imageEnv } from '../../bench/common.ts';
import { PRODUCTION_INSTALL, PRODUCTION_PKG_DELETE, RUNTIME_PATHS } from '../../src/dev/image-layout.ts';
import { root } from './helm.ts';
import { moduleOf, reachableModules } from './modules.ts';

interface Stage {
  from: string;
  name: string;
  instructions: { op: string; args: string }[];
}

/** Dockerfile stages with their instructions (continuation lines joined, comments dropped). */
function stages(text: string): Stage[] {
  const logical = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const args = new Map<string, string>();
  const result: Stage[] = [];
  for (const line of logical) {
    const [op = '', ...rest] = line.split(/\s+/);
    const rawArgs = rest.join(' ');
    if (op === 'ARG' && result.length === 0) {
      const [key, value = ''] = rawArgs.split('=');
      args.set(key as string, value);
    } else if (op === 'FROM') {
      const [image = '', , name = ''] = rest;
      result.push({
        from: image.replace(/\$\{(\w+)\}/g, (_, k: string) => args.get(k) ?? ''),
        name,
        instructions: [],
      });
    } else {
      result.at(-1)?.instructions.push({ op, args: rawArgs });
    }
  }
  return result;
}

const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const all = stages(dockerfile);
const runtime = all.at(-1) as Stage;
const ops = (stage: Stage, op: string) => stage.instructions.filter((i) => i.op === op).map((i) => i.args);

describe('Dockerfile', () => {
  it('builds in a Node 24 stage and runs on distroless Node 24', () => {
    expect(all.map((s) => s.name)).toEqual(['build', 'deps', 'runtime']);
    expect(all[0]?.from).toBe('node:24-slim');
    expect(runtime.from).toBe('gcr.io/distroless/nodejs24-debian12:nonroot');
  });

  it('compiles with the dev dependencies, minus the Node binary package the base image makes redundant', () => {
    const build = all[0] as Stage;
    const run = ops(build, 'RUN').join('\n');
    expect(run).toContain('npm ci --ignore-scripts');
    expect(run).toContain('npm pkg delete devDependencies.node');
    expect(ops(build, 'RUN')).toContain('npm run build');
  });

  it('installs production dependencies exactly as image:check does', () => {
    const deps = all.find((s) => s.name === 'deps') as Stage;
    const run = ops(deps, 'RUN').join('\n');
    expect(run).toContain(`npm ${PRODUCTION_PKG_DELETE.join(' ')} &&`);
    expect(run).toContain(`npm ${PRODUCTION_INSTALL.join(' ')}`);
  });

  it('copies node_modules and exactly the paths image:check assembles into the runtime image', () => {
    const copied = ops(runtime, 'COPY').map((args) => args.split(/\s+/).at(-1)?.replace(/^\.\//, ''));
    expect(copied.sort()).toEqual([...RUNTIME_PATHS, 'node_modules'].sort());
  });

  it('compiles into the image exactly the modules the CLI and the exports load', async () => {
    // The build (`npm run build`, and image:check's) compiled src/dev and src/stack too, and the
    // runtime stage copies all of dist/: the image carried the local stack's tooling, never run there.
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const { stdout } = await promisify(execFile)(process.execPath, [
      tsc,
      '-p',
      join(root, 'tsconfig.build.json'),
      '--listFilesOnly',
    ]);
    const compiled = stdout
      .split('\n')
      .map((file) => relative(root, file.trim()).split('\\').join('/'))
      .filter((file) => file.startsWith('src/'))
      .map(moduleOf);
    expect(compiled.sort()).toEqual([...reachableModules()].sort());
  });

  it('runs as a numeric non-root user, PID 1 being node itself, with fraudlink as the entrypoint', () => {
    expect(ops(runtime, 'USER')).toEqual(['65532:65532']);
    const entrypoint = JSON.parse(ops(runtime, 'ENTRYPOINT')[0] as string) as string[];
    expect(entrypoint[0]).toBe('/nodejs/bin/node');
    expect(entrypoint.at(-1)).toBe('/app/bin/fraudlink.js');
    expect(JSON.parse(ops(runtime, 'CMD')[0] as string)).toEqual(['--help']);
    expect(ops(runtime, 'EXPOSE')).toEqual(['9464']);
  });

  it('fixes the glibc mmap threshold in the runtime image, and the benchmarks run their children with it', () => {
    expect(ops(runtime, 'ENV')).toContain('MALLOC_MMAP_THRESHOLD_=131072');
    expect(imageEnv).toEqual({ MALLOC_MMAP_THRESHOLD_: '131072' });
  });

  it('sends only what the build copies in its context', () => {
    const allowed = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/$/, ''));
    const sources = all
      .flatMap((s) => ops(s, 'COPY'))
      .filter((args) => !args.startsWith('--from'))
      .flatMap((args) => args.split(/\s+/).slice(0, -1));
    expect(sources.filter((src) => !allowed.includes(src.replace(/\/$/, '')))).toEqual([]);
  });
});
