// Runs the real helm binary against helm/fraudlink. helm is built once with the machine's Go
// (`go install`) into the git-ignored .cache/bin/, like the stack's downloads, and reused after.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withLock } from '../../src/stack/lock.ts';

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const chartDir = join(root, 'helm', 'fraudlink');
const binDir = join(root, '.cache', 'bin');
const helmBin = join(binDir, 'helm');
/** The version verified with this chart; any later v3 works too. */
export const HELM_VERSION = 'v3.22.0';
const HELM_MODULE = `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`;
/** helm built by `go install` carries no cluster version and assumes Kubernetes 1.20; say which we target. */
export const KUBE_VERSION = '1.31.0';

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function exec(file: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Result> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') reject(err);
      else resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
  });
}

/** The cached helm binary, built first when absent (about two minutes; CI has Go). */
export async function ensureHelm(): Promise<string> {
  if (existsSync(helmBin)) return helmBin;
  mkdirSync(binDir, { recursive: true });
  return withLock(join(binDir, '.helm-install.lock'), async () => {
    if (existsSync(helmBin)) return helmBin; // another test file built it while we waited
    const { code, stderr } = await exec('go', ['install', HELM_MODULE], {
      ...process.env,
      GOBIN: binDir,
      GOFLAGS: '-buildvcs=false',
    }).catch((err: Error) => ({ code: -1, stdout: '', stderr: `${err.message} (is Go installed?)` }));
    if (code !== 0) throw new Error(`go install ${HELM_MODULE} failed:\n${stderr.slice(-2000)}`);
    return helmBin;
  });
}

export async function helm(args: string[]): Promise<Result> {
  return exec(await ensureHelm(), args, { ...process.env, HELM_CACHE_HOME: join(root, '.cache', 'helm') });
}

/** `--set`/`--set-string`/`-f` arguments for values. */
export type ValueArgs = string[];

export async function template(
  values: ValueArgs,
  release = 'rel',
  namespace = 'payments',
  chart = chartDir,
): Promise<Result> {
  return helm([
    'template',
    release,
    chart,
    '--namespace',
    namespace,
    '--kube-version',
    KUBE_VERSION,
    ...values,
  ]);
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

/**
 * Turns helm's YAML output into objects with helm itself: a throwaway chart reads the manifests as a
 * file and prints them with `fromYaml | toJson`, one JSON line (the project has no YAML parser).
 */
export async function toObjects(manifests: string): Promise<K8sObject[]> {
  const dir = mkdtempSync(join(tmpdir(), 'fraudlink-yaml2json-'));
  try {
    mkdirSync(join(dir, 'templates'));
    writeFileSync(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: yaml2json\nversion: 0.0.0\n');
    writeFileSync(join(dir, 'manifests.yaml'), manifests);
    writeFileSync(
      join(dir, 'templates', 'list.yaml'),
      [
        '{{- $items := list }}',
        '{{- range $doc := regexSplit "(?m)^---[ \\t]*$" (.Files.Get "manifests.yaml") -1 }}',
        '{{- $obj := fromYaml $doc }}',
        '{{- if hasKey $obj "Error" }}{{ fail (printf "unparsable manifest: %s" $obj.Error) }}{{ end }}',
        '{{- if $obj }}{{ $items = append $items $obj }}{{ end }}',
        '{{- end }}',
        '{{ dict "apiVersion" "v1" "kind" "List" "items" $items | toJson }}',
        '',
      ].join('\n'),
    );
    const { code, stdout, stderr } = await helm(['template', 'x', dir]);
    if (code !== 0) throw new Error(`converting manifests failed: ${stderr}`);
    const line = stdout.split('\n').find((l) => l.startsWith('{'));
    if (!line) throw new Error(`no JSON in the conversion output:\n${stdout.slice(0, 500)}`);
    return (JSON.parse(line) as { items: K8sObject[] }).items;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Renders the chart and returns its objects and the raw text; throws when helm refuses. */
export async function render(values: ValueArgs): Promise<{ text: string; objects: K8sObject[] }> {
  const { code, stdout, stderr } = await template(values);
  if (code !== 0) throw new Error(`helm template failed:\n${stderr}`);
  return { text: stdout, objects: await toObjects(stdout) };
}

export function find(objects: K8sObject[], kind: string, nameSuffix: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));
  if (!found) throw new Error(`no ${kind} named *${nameSuffix}`);
  return found;
}

export const ciValues = (name: 'lint' | 'full'): ValueArgs => [
  '-f',
  join(chartDir, 'ci', `${name}-values.yaml`),
];

/**
 * NOTES.txt as `helm install` would print it. `helm template` skips NOTES and `install --dry-run`
 * needs a cluster, so a copy of the chart renders the same text inside a ConfigMap.
 */
export async function renderNotes(values: ValueArgs, release = 'rel'): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'fraudlink-notes-'));
  try {
    const chart = join(dir, 'fraudlink');
    cpSync(chartDir, chart, { recursive: true });
    const notes = readFileSync(join(chart, 'templates', 'NOTES.txt'), 'utf8');
    rmSync(join(chart, 'templates', 'NOTES.txt'));
    writeFileSync(join(chart, 'templates', '_notes.tpl'), `{{- define "notes" }}${notes}{{- end }}`);
    writeFileSync(
      join(chart, 'templates', 'notes.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include "notes" . | quote }}\n',
    );
    const { code, stdout, stderr } = await template(values, release, 'payments', chart);
    if (code !== 0) throw new Error(`rendering NOTES.txt failed:\n${stderr}`);
    const found = (await toObjects(stdout)).find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === 'notes',
    );
    if (!found) throw new Error('the notes ConfigMap was not rendered');
    return (found.data as { notes: string }).notes;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
