import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadConnectorConfig, loadTableConfig, loadVerifierConfig } from '../../src/config/index.ts';
import { parseInstant } from '../../src/instant.ts';
import { DRAIN_TIMEOUT_MS } from '../../src/verifier/verifier.ts';
import { writeTlsFiles } from '../config/tls-files.ts';
import {
  chartDir,
  ciValues,
  ensureHelm,
  find,
  helm,
  type K8sObject,
  render,
  renderNotes,
  template,
  toObjects,
} from './helm.ts';
import { configVariables } from './variables.ts';

interface Container {
  name: string;
  args: string[];
  env: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom: { configMapRef: { name: string } }[];
  ports: { name: string; containerPort: number }[];
  startupProbe: { httpGet: { path: string; port: string } };
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext: Record<string, unknown>;
  resources: { requests?: Record<string, string> };
}
interface Volume {
  name: string;
  emptyDir?: { sizeLimit?: string };
  secret?: { secretName: string };
}
interface PodSpec {
  containers: Container[];
  securityContext: Record<string, unknown>;
  volumes: Volume[];
  terminationGracePeriodSeconds: number;
}
interface Deployment extends K8sObject {
  spec: {
    replicas?: number;
    strategy: { type: string };
    template: { spec: PodSpec };
  };
}
interface StatefulSet extends K8sObject {
  spec: {
    replicas: number;
    serviceName: string;
    podManagementPolicy: string;
    template: { spec: PodSpec };
    volumeClaimTemplates?: {
      metadata: { name: string };
      spec: {
        accessModes: string[];
        storageClassName?: string;
        resources: { requests: { storage: string } };
      };
    }[];
  };
}
const containerOf = (d: K8sObject) => (d as Deployment).spec.template.spec.containers[0] as Container;
const dataOf = (o: K8sObject) => o.data as Record<string, string>;

/** A component's workload: the connector's and the verifier's Deployment, the table's StatefulSet. */
const workload = (objects: K8sObject[], suffix: string): K8sObject =>
  find(objects, suffix === '-table' ? 'StatefulSet' : 'Deployment', suffix);
const components = ['-connector', '-verifier', '-table'];

/** A component's environment as its pod gets it: its ConfigMap, then its env entries (secrets as "from-secret"). */
function podEnv(objects: K8sObject[], suffix: string): Record<string, string> {
  const container = containerOf(workload(objects, suffix));
  const env: Record<string, string> = {};
  for (const { configMapRef } of container.envFrom) {
    Object.assign(env, dataOf(find(objects, 'ConfigMap', configMapRef.name)));
  }
  for (const e of container.env ?? [])
    env[e.name] = e.value ?? (e.valueFrom?.secretKeyRef ? 'from-secret' : '');
  return env;
}

const secrets = {
  apiKey: 'ci-api-key-not-a-secret',
  kafkaSaslPassword: 'ci-sasl-password-not-a-secret',
  schemaRegistryPassword: 'ci-registry-password-not-a-secret',
};

let minimal: { text: string; objects: K8sObject[] };
let full: { text: string; objects: K8sObject[] };

// The first run builds helm with Go (about two minutes); later runs find it in .cache/bin.
beforeAll(async () => {
  await ensureHelm();
  [minimal, full] = await Promise.all([render(ciValues('lint')), render(ciValues('full'))]);
}, 600_000);

describe('helm chart', { timeout: 60_000 }, () => {
  it('passes helm lint --strict with its defaults, the minimal values and every option on', async () => {
    for (const values of [[], ciValues('lint'), ciValues('full')]) {
      const { code, stdout, stderr } = await helm(['lint', '--strict', chartDir, ...values]);
      expect(code, `${stdout}\n${stderr}`).toBe(0);
      expect(stdout).toContain('0 chart(s) failed');
    }
  });

  it('runs exactly one connector replica with strategy Recreate, so only one instance publishes', () => {
    for (const { objects } of [minimal, full]) {
      const connector = find(objects, 'Deployment', '-connector') as Deployment;
      expect(connector.spec.replicas).toBe(1);
      expect(connector.spec.strategy.type).toBe('Recreate');
      expect(containerOf(connector).args).toEqual(['connector', 'run']);
      expect(
        objects.filter((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name.endsWith('-connector')),
      ).toEqual([]);
    }
  });

  it('probes /healthz for start-up and liveness and /readyz for readiness on the metrics port', () => {
    for (const suffix of components) {
      const c = containerOf(workload(full.objects, suffix));
      expect(c.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
      expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
      expect(c.ports).toEqual([{ name: 'metrics', containerPort: 9464, protocol: 'TCP' }]);
      expect(c.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    }
  });

  it('never renders a secret value in plain text: a created Secret holds base64, pods use secretKeyRef', () => {
    for (const value of Object.values(secrets)) expect(full.text).not.toContain(value);
    const secret = find(full.objects, 'Secret', '-secrets');
    expect(secret.stringData).toBeUndefined();
    const decoded = Object.fromEntries(
      Object.entries(dataOf(secret)).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(decoded).toEqual({
      'api-key': secrets.apiKey,
      'kafka-sasl-password': secrets.kafkaSaslPassword,
      'schema-registry-password': secrets.schemaRegistryPassword,
    });
    for (const suffix of ['-connector', '-verifier']) {
      const env = containerOf(find(full.objects, 'Deployment', suffix)).env;
      expect(env.map((e) => [e.name, e.valueFrom?.secretKeyRef?.name])).toEqual([
        ['API_KEY', 'rel-fraudlink-secrets'],
        ['KAFKA_SASL_PASSWORD', 'rel-fraudlink-secrets'],
        ['SCHEMA_REGISTRY_PASSWORD', 'rel-fraudlink-secrets'],
      ]);
      expect(env.every((e) => e.value === undefined)).toBe(true);
    }
    // The table calls no upstream: its own API keys, and the passwords, but not the upstream's key.
    const table = containerOf(workload(full.objects, '-table')).env;
    expect(table.map((e) => [e.name, e.valueFrom?.secretKeyRef])).toEqual([
      ['TABLE_API_KEYS', { name: 'fraudlink-table-api-keys', key: 'api-keys' }],
      ['KAFKA_SASL_PASSWORD', { name: 'rel-fraudlink-secrets', key: 'kafka-sasl-password' }],
      ['SCHEMA_REGISTRY_PASSWORD', { name: 'rel-fraudlink-secrets', key: 'schema-registry-password' }],
    ]);
    expect(dataOf(find(full.objects, 'ConfigMap', '-table')).TABLE_API_KEYS).toBeUndefined();
  });

  it('references an existing Secret without creating one', () => {
    expect(minimal.objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const env = containerOf(find(minimal.objects, 'Deployment', '-connector')).env;
    expect(env).toEqual([
      { name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'fraudlink-credentials', key: 'api-key' } } },
    ]);
  });

  it('runs as a non-root user with a read-only root filesystem and no capabilities', () => {
    for (const suffix of components) {
      const d = workload(full.objects, suffix) as Deployment;
      expect(d.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
      expect(containerOf(d).securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
    }
  });

  it('gives each pod an environment that the configuration loaders accept as it is', async () => {
    const files = await writeTlsFiles();
    onTestFinished(() => rm(files.dir, { recursive: true, force: true }));
    // The loaders read the mutual-TLS files, which the pods find in the mounted Secret: here, local ones.
    const mountedAs: Record<string, string> = {
      '/etc/fraudlink/api-tls/tls.crt': files.cert,
      '/etc/fraudlink/api-tls/tls.key': files.key,
      '/etc/fraudlink/api-tls/ca.crt': files.cert,
      ...Object.fromEntries(
        ['registry-tls', 'kafka-tls'].flatMap((dir) => [
          [`/etc/fraudlink/${dir}/tls.crt`, files.cert],
          [`/etc/fraudlink/${dir}/tls.key`, files.key],
          [`/etc/fraudlink/${dir}/ca.crt`, files.cert],
        ]),
      ),
    };
    const local = (env: Record<string, string>) =>
      Object.fromEntries(Object.entries(env).map(([k, v]) => [k, mountedAs[v] ?? v]));
    for (const { objects } of [minimal, full]) {
      expect(loadConnectorConfig(local(podEnv(objects, '-connector'))).connector.name).toBe(
        'fraudlink-alerts',
      );
      if (objects === full.objects) {
        const table = loadTableConfig(local(podEnv(objects, '-table')));
        expect(table.alertsTopic).toBe('fraud.alerts.v1');
        expect(table.dbPath).toBe('/var/lib/fraudlink/table.db');
      }
      expect(loadVerifierConfig(local(podEnv(objects, '-verifier'))).verifier.replyTopicsAllowed.source).toBe(
        '^(?:^vop\\.verification\\.replies\\..*)$',
      );
    }
    expect(podEnv(full.objects, '-connector')).toMatchObject({
      API_TLS_CERT: '/etc/fraudlink/api-tls/tls.crt',
      API_TLS_KEY: '/etc/fraudlink/api-tls/tls.key',
      API_TLS_CA: '/etc/fraudlink/api-tls/ca.crt',
    });
    const tls = loadConnectorConfig(local(podEnv(full.objects, '-connector')));
    expect(tls.kafka.sasl).toEqual({
      mechanism: 'scram-sha-512',
      username: 'fraudlink',
      password: 'from-secret',
    });
    expect(tls.registry.auth).toEqual({ username: 'fraudlink', password: 'from-secret' });
  });

  it('renders the numbers of a values file as integers the loaders accept, up to the schema maximums', async () => {
    // Helm reads a values file's numbers as float64: `quote` alone turned 86400000 into "8.64e+07"
    // (--set keeps them integers, which is why the other renders never showed it), and a probe's
    // periodSeconds of 1000000 became `1e+06`, which the API server refuses for an int32.
    const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as SchemaNode;
    const dir = mkdtempSync(join(tmpdir(), 'fraudlink-maximums-'));
    try {
      const file = join(dir, 'maximums.yaml');
      writeFileSync(file, JSON.stringify(maximumsOf(schema))); // JSON is YAML
      const { text, objects } = await render([...ciValues('lint'), '-f', file]);
      expect(text.split('\n').filter((line) => /:\s*-?[\d.]+e[+-]?\d+\s*$/i.test(line))).toEqual([]);
      const int32 = 2 ** 31 - 1;
      const probes = containerOf(find(objects, 'Deployment', '-verifier'));
      expect(probes.startupProbe).toMatchObject({ periodSeconds: int32, failureThreshold: int32 });
      expect(probes.livenessProbe).toMatchObject({ periodSeconds: int32, timeoutSeconds: int32 });
      expect(probes.readinessProbe).toMatchObject({ timeoutSeconds: int32, failureThreshold: int32 });
      const connector = podEnv(objects, '-connector');
      const verifier = podEnv(objects, '-verifier');
      expect(connector).toMatchObject({ POLL_INTERVAL_MS: '86400000', CONNECTOR_TX_MAX_ROWS: '1000000' });
      expect(verifier).toMatchObject({ VERIFY_DEFAULT_DEADLINE_MS: '3600000', API_TIMEOUT_MS: '600000' });
      const numbers = Object.entries({ ...connector, ...verifier }).filter(
        ([, v]) => v !== '' && !Number.isNaN(Number(v)),
      );
      expect(numbers.filter(([, v]) => !/^-?\d+$/.test(v))).toEqual([]);
      expect(loadConnectorConfig(connector).connector.pollIntervalMs).toBe(86_400_000);
      expect(loadVerifierConfig(verifier).verifier.defaultDeadlineMs).toBe(3_600_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bounds every integer of the values schema, so no value renders past what Kubernetes takes', () => {
    const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as SchemaNode;
    expect(unboundedIntegers(schema)).toEqual([]);
  });

  it('serves the probes on every IPv4 address by default and on "::" for IPv6-only clusters', async () => {
    const ipv6 = await render([...ciValues('lint'), '--set', 'httpHost=::']);
    for (const suffix of ['-connector', '-verifier']) {
      expect(podEnv(minimal.objects, suffix).HTTP_HOST).toBe('0.0.0.0');
      expect(podEnv(ipv6.objects, suffix).HTTP_HOST).toBe('::');
    }
    expect(loadVerifierConfig(podEnv(ipv6.objects, '-verifier')).http.host).toBe('::');
  });

  it('can set every variable the configuration defines, from a value or a Secret', async () => {
    // SASL's password mechanisms and OAUTHBEARER exclude each other: the OAuth variables come from a
    // rendering with that mechanism.
    const oauth = await render([
      ...ciValues('full'),
      '--set',
      'kafka.sasl.mechanism=oauthbearer,kafka.sasl.oauth.tokenUrl=https://login.example/token,' +
        'kafka.sasl.oauth.clientId=fraudlink,kafka.sasl.oauth.scope=kafka,' +
        'secrets.kafkaSaslOauthClientSecret=ci-oauth-secret-not-a-secret',
    ]);
    const set = new Set(
      [full, oauth].flatMap(({ objects }) =>
        components.flatMap((suffix) => Object.keys(podEnv(objects, suffix))),
      ),
    );
    expect(configVariables.filter((v) => !set.has(v))).toEqual([]);
  });

  it('scales the verifier with an autoscaler when asked, keeping a disruption budget', () => {
    const fixed = find(minimal.objects, 'Deployment', '-verifier') as Deployment;
    expect(fixed.spec.replicas).toBe(2);
    expect(containerOf(fixed).args).toEqual(['verifier']);
    const scaled = find(full.objects, 'Deployment', '-verifier') as Deployment;
    expect(scaled.spec.replicas).toBeUndefined();
    expect(find(full.objects, 'HorizontalPodAutoscaler', '-verifier').spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'rel-fraudlink-verifier' },
      minReplicas: 2,
      maxReplicas: 6,
    });
    expect(find(full.objects, 'PodDisruptionBudget', '-verifier').spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/component': 'verifier' }) },
    });
  });

  it('lets a node drain evict a verifier whatever the replica count, one verifier at a time', async () => {
    // A budget of minAvailable: 1 over one replica refuses every eviction and `kubectl drain` hangs.
    for (const values of [
      ['--set', 'verifier.replicas=1'],
      ['--set', 'verifier.autoscaling.enabled=true', '--set', 'verifier.autoscaling.minReplicas=1'],
      ['--set', 'verifier.replicas=6'],
    ]) {
      const { objects } = await render([...ciValues('lint'), ...values]);
      const spec = find(objects, 'PodDisruptionBudget', '-verifier').spec as Record<string, unknown>;
      expect(spec.maxUnavailable, values.join(' ')).toBe(1);
      expect(spec.minAvailable, values.join(' ')).toBeUndefined();
    }
  });

  it('exposes every pod’s metrics through a Service the ServiceMonitor selects', () => {
    const service = find(full.objects, 'Service', '-metrics');
    const monitor = find(full.objects, 'ServiceMonitor', 'rel-fraudlink');
    const spec = service.spec as { selector: Record<string, string>; publishNotReadyAddresses: boolean };
    expect(spec.selector).toEqual({
      'app.kubernetes.io/name': 'fraudlink',
      'app.kubernetes.io/instance': 'rel',
    });
    expect(spec.publishNotReadyAddresses).toBe(true);
    const selector = (monitor.spec as { selector: { matchLabels: Record<string, string> } }).selector;
    expect(service.metadata.labels).toMatchObject(selector.matchLabels);
    expect(monitor.metadata.labels).toMatchObject({ release: 'prometheus' });
    expect(minimal.objects.filter((o) => o.kind === 'ServiceMonitor')).toEqual([]);
  });

  it('keeps Service names and label values within 63 characters for the longest release name helm takes', async () => {
    // Helm allows 53 characters; one without "fraudlink" in it is prefixed to the chart's name.
    const release = 'payments-eu-west-1-production-alerts-bridge-blue01x';
    const { code, stdout, stderr } = await template(ciValues('full'), release);
    expect(code, stderr).toBe(0);
    const objects = await toObjects(stdout);
    const services = objects.filter((o) => o.kind === 'Service');
    expect(services.map((o) => o.metadata.name)).toEqual([
      expect.stringMatching(/-metrics$/),
      expect.stringMatching(/-table$/),
    ]);
    for (const o of services) expect(o.metadata.name.length, o.metadata.name).toBeLessThanOrEqual(63);
    for (const o of objects) {
      for (const value of Object.values(o.metadata.labels ?? {}))
        expect(value.length, `${o.kind} ${o.metadata.name}: ${value}`).toBeLessThanOrEqual(63);
    }
    const notes = await renderNotes(ciValues('full'), release);
    for (const service of services) expect(notes).toContain(`svc/${service.metadata.name} `);
  });

  it('prints install notes naming the release objects, and warns of verifiers beyond the partitions', async () => {
    const notes = await renderNotes(ciValues('full'));
    expect(notes).toContain('deploy/rel-fraudlink-connector');
    expect(notes).toContain('read_committed');
    expect(notes).toContain('docs/operations.md');
    expect(notes).not.toContain('WARNING');
    const crowded = await renderNotes([...ciValues('lint'), '--set', 'verifier.replicas=8']);
    expect(crowded).toContain('WARNING: up to 8 verifiers for 6 partitions');
  });

  it('ships the Grafana dashboard only when asked, labelled for the sidecar', () => {
    expect(minimal.objects.filter((o) => o.metadata.name.endsWith('-dashboard'))).toEqual([]);
    const dashboard = find(full.objects, 'ConfigMap', '-dashboard');
    expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    const json = JSON.parse(dataOf(dashboard)['fraudlink.json'] as string) as { uid: string };
    expect(json.uid).toBe('fraudlink-overview');
  });
});

describe('helm chart: the table component', { timeout: 60_000 }, () => {
  const tableOn = (...settings: string[]) => [
    ...ciValues('lint'),
    ...['table.enabled=true', ...settings].flatMap((v) => ['--set', v]),
  ];
  const podOf = (objects: K8sObject[]) => (workload(objects, '-table') as StatefulSet).spec.template.spec;

  it('is off by default: an upgrade of an existing release creates no table objects', () => {
    expect(minimal.objects.filter((o) => o.metadata.name.endsWith('-table'))).toEqual([]);
  });

  it('runs independent replicas, each with a volume claim for its store under TABLE_DB_PATH', () => {
    const table = workload(full.objects, '-table') as StatefulSet;
    expect(table.spec.replicas).toBe(3);
    expect(table.spec.podManagementPolicy).toBe('Parallel');
    expect(containerOf(table).args).toEqual(['table']);
    expect(table.spec.volumeClaimTemplates).toEqual([
      expect.objectContaining({
        metadata: expect.objectContaining({ name: 'store' }),
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } } },
      }),
    ]);
    expect(containerOf(table).volumeMounts).toContainEqual({
      name: 'store',
      mountPath: '/var/lib/fraudlink',
    });
    expect(podEnv(full.objects, '-table').TABLE_DB_PATH).toBe('/var/lib/fraudlink/table.db');
    // No claim template and an emptyDir of the same name: nothing else in the pod changes.
    expect(podOf(full.objects).volumes.find((v) => v.name === 'store')).toBeUndefined();
  });

  it('keeps the store in an emptyDir when persistence is off, sized by persistence.size', async () => {
    const { objects } = await render(
      tableOn(
        'table.apiKeys.existingSecret=keys',
        'table.persistence.enabled=false',
        'table.persistence.size=5Gi',
      ),
    );
    const table = workload(objects, '-table') as StatefulSet;
    expect(table.spec.volumeClaimTemplates).toBeUndefined();
    expect(podOf(objects).volumes.find((v) => v.name === 'store')).toEqual({
      name: 'store',
      emptyDir: { sizeLimit: '5Gi' },
    });
    expect(containerOf(table).volumeMounts).toContainEqual({
      name: 'store',
      mountPath: '/var/lib/fraudlink',
    });
  });

  it('uses the storage class asked for', async () => {
    const { objects } = await render(
      tableOn('table.apiKeys.existingSecret=keys', 'table.persistence.storageClassName=fast-ssd'),
    );
    const claim = (workload(objects, '-table') as StatefulSet).spec.volumeClaimTemplates?.[0];
    expect(claim?.spec.storageClassName).toBe('fast-ssd');
  });

  it('serves lookups through a Service of the table pods that only ready replicas back', () => {
    const service = find(full.objects, 'Service', '-table');
    expect(service.spec).toEqual({
      type: 'ClusterIP',
      selector: {
        'app.kubernetes.io/name': 'fraudlink',
        'app.kubernetes.io/instance': 'rel',
        'app.kubernetes.io/component': 'table',
      },
      ports: [{ name: 'http', port: 80, targetPort: 'metrics', protocol: 'TCP' }],
    });
    expect((workload(full.objects, '-table') as StatefulSet).spec.serviceName).toBe(service.metadata.name);
    // The metrics Service selects every pod of the release, so the table's /metrics are scraped too.
    const metrics = find(full.objects, 'Service', '-metrics').spec as { selector: Record<string, string> };
    const labels = (
      workload(full.objects, '-table') as unknown as {
        spec: { template: { metadata: { labels: Record<string, string> } } };
      }
    ).spec.template.metadata.labels;
    expect(labels).toMatchObject(metrics.selector);
  });

  it('refuses a table without API keys unless anonymous lookups are asked for, and warns of them', async () => {
    const refused = await template(tableOn());
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('table.apiKeys.existingSecret');
    expect(refused.stderr).toContain('table.apiKeys.allowAnonymous=true');
    const { objects } = await render(tableOn('table.apiKeys.allowAnonymous=true'));
    expect(Object.keys(podEnv(objects, '-table'))).not.toContain('TABLE_API_KEYS');
    const notes = await renderNotes(tableOn('table.apiKeys.allowAnonymous=true'));
    expect(notes).toContain('WARNING: no API keys');
    expect(notes).toContain('svc/rel-fraudlink-table ');
  });

  it('needs neither the upstream address nor its API key when it runs alone', async () => {
    const alone = [
      ...['kafka.brokers=k:9092', 'schemaRegistry.url=http://r', 'table.enabled=true'],
      ...['connector.enabled=false', 'verifier.enabled=false', 'table.apiKeys.existingSecret=keys'],
    ];
    const { objects } = await render(alone.flatMap((v) => ['--set', v]));
    expect(
      objects.map((o) => `${o.kind} ${o.metadata.name}`).filter((n) => /connector|verifier/.test(n)),
    ).toEqual([]);
    const env = podEnv(objects, '-table');
    expect(Object.keys(env).filter((k) => k.startsWith('API_'))).toEqual([]);
    expect(loadTableConfig(env).alertsTopic).toBe('fraud.alerts.v1');
    // Nor the upstream's TLS Secret, which the connector and the verifier mount.
    const withTls = await render([
      ...tableOn('table.apiKeys.existingSecret=keys'),
      ...['--set', 'api.tls.existingSecret=psp-tls'],
    ]);
    expect(podOf(withTls.objects).volumes.map((v) => v.name)).not.toContain('api-tls');
    expect(containerOf(workload(withTls.objects, '-connector')).volumeMounts.map((m) => m.name)).toContain(
      'api-tls',
    );
  });

  it('reads the topic the connector writes unless told another', async () => {
    const { objects } = await render(
      tableOn('table.apiKeys.existingSecret=keys', 'connector.alertsTopic=psp.alerts', 'table.alertsTopic='),
    );
    expect(podEnv(objects, '-table').ALERTS_TOPIC).toBe('psp.alerts');
    const other = await render(
      tableOn('table.apiKeys.existingSecret=keys', 'table.alertsTopic=mirror.alerts'),
    );
    expect(podEnv(other.objects, '-table').ALERTS_TOPIC).toBe('mirror.alerts');
  });

  it('lets a node drain evict one table replica at a time', () => {
    expect(find(full.objects, 'PodDisruptionBudget', '-table').spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/component': 'table' }) },
    });
  });

  it.each([
    ['no replica', ['table.replicas=0'], 'replicas'],
    ['a store size that is not a quantity', ['table.persistence.size=lots'], 'size'],
    ['an unknown Service type', ['table.service.type=Ingress'], 'type'],
  ])('the values schema rejects %s', async (_, settings, named) => {
    const { code, stderr } = await template(tableOn('table.apiKeys.existingSecret=keys', ...settings));
    expect(code).not.toBe(0);
    expect(stderr).toContain('values don');
    expect(stderr).toContain(named);
  });
});

describe('helm values validation', { timeout: 60_000 }, () => {
  it.each([
    ['an unknown log level', ['--set', 'logLevel=loud'], 'logLevel'],
    [
      'a connector replica count (there is always exactly one)',
      ['--set', 'connector.replicas=2'],
      'replicas',
    ],
    ['a broker list that is not host:port', ['--set', 'kafka.brokers=kafka'], 'brokers'],
    ['a broker port out of range', ['--set', 'kafka.brokers=kafka:0'], 'brokers'],
    ['a broker port past 65535', ['--set', 'kafka.brokers=a:9092\\,b:65536'], 'brokers'],
    ['a replication factor of 0', ['--set', 'kafka.topicReplicationFactor=0'], 'topicReplicationFactor'],
    ['"." as a topic name', ['--set-string', 'verifier.dlqTopic=.'], 'dlqTopic'],
    ['".." as a topic name', ['--set-string', 'connector.offsetsTopic=..'], 'offsetsTopic'],
    ['a topic name Kafka would refuse', ['--set', 'connector.alertsTopic=fraud alerts'], 'alertsTopic'],
    ['a verifier port out of range', ['--set', 'httpPort=70000'], 'httpPort'],
    [
      'a probe period past a Kubernetes int32',
      ['--set', 'probes.liveness.periodSeconds=2147483648'],
      'probes/liveness/periodSeconds',
    ],
    ['a listen address the probes may not reach', ['--set', 'httpHost=127.0.0.1'], 'httpHost'],
    ['a start date with no time', ['--set-string', 'connector.exportStart=2026-01-31'], 'exportStart'],
    [
      'a disruption budget that lets no verifier be evicted',
      ['--set', 'verifier.podDisruptionBudget.maxUnavailable=0'],
      'maxUnavailable',
    ],
    [
      'a start time with no zone',
      ['--set-string', 'connector.exportStart=2026-01-31T09:30:00'],
      'exportStart',
    ],
  ])('the values schema rejects %s', async (_, args, named) => {
    const { code, stderr } = await template([...ciValues('lint'), ...args]);
    expect(code).not.toBe(0);
    expect(stderr).toContain('values don');
    expect(stderr).toContain(named);
  });

  it('accepts as connector.exportStart exactly the forms of instant the connector reads', async () => {
    const values = [
      '2026-01-31T09:30:00Z',
      '2026-01-31T09:30+01:00',
      '2026-01-31t09:30:00.123456-0530',
      '2026-01-31T09:30:00z',
      '2026-01-31',
      '2026-01-31T09:30:00',
      '2026-01-31T09:30:00 Z',
      '2026-01-31Tgarbage',
      '20260131T093000Z',
    ];
    const results = await Promise.all(
      values.map((v) => template([...ciValues('lint'), '--set-string', `connector.exportStart=${v}`])),
    );
    const chart = values.map((v, i) => [v, results[i]?.code === 0]);
    // The schema checks the form only; the connector also refuses a date that does not exist (Feb 30).
    expect(chart).toEqual(values.map((v) => [v, parseInstant(v) !== null]));
    expect(chart.filter(([, ok]) => ok)).toHaveLength(4);
  });

  it('refuses a verifier grace too short for its drain and its last commit, naming both', async () => {
    // Kubernetes kills the pod when the grace runs out: one under the drain ends it mid-drain.
    const drainSeconds = DRAIN_TIMEOUT_MS / 1000;
    const grace = (seconds: number) => [
      ...ciValues('lint'),
      '--set',
      `verifier.terminationGracePeriodSeconds=${seconds}`,
    ];
    const short = await template(grace(drainSeconds + 4));
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain(`verifier.terminationGracePeriodSeconds is ${drainSeconds + 4}`);
    expect(short.stderr).toContain(`up to ${drainSeconds} s for the verifications in flight`);
    const { objects } = await render(grace(drainSeconds + 5));
    const pod = (find(objects, 'Deployment', '-verifier').spec as { template: { spec: unknown } }).template
      .spec as { terminationGracePeriodSeconds: number };
    expect(pod.terminationGracePeriodSeconds).toBe(drainSeconds + 5);
    // No verifier, no drain: the connector's grace is its own.
    const { code } = await template([...grace(1), '--set', 'verifier.enabled=false']);
    expect(code).toBe(0);
  });

  it('mounts a CA bundle alone for a private upstream CA, without a client certificate', async () => {
    const caOnly = await render([
      ...ciValues('lint'),
      ...['api.tls.existingSecret=psp-ca', 'api.tls.caKey=ca.crt'].flatMap((v) => ['--set', v]),
      ...['api.tls.certKey=', 'api.tls.keyKey='].flatMap((v) => ['--set-string', v]),
    ]);
    for (const component of ['-connector', '-verifier']) {
      const env = podEnv(caOnly.objects, component);
      expect(Object.keys(env).filter((k) => k.startsWith('API_TLS_'))).toEqual(['API_TLS_CA']);
      expect(env.API_TLS_CA).toBe('/etc/fraudlink/api-tls/ca.crt');
      const pod = (find(caOnly.objects, 'Deployment', component).spec as { template: { spec: unknown } })
        .template.spec as { volumes: { name: string; secret?: { secretName: string; items: unknown[] } }[] };
      expect(pod.volumes.find((v) => v.name === 'api-tls')?.secret).toEqual({
        secretName: 'psp-ca',
        defaultMode: 0o440,
        items: [{ key: 'ca.crt', path: 'ca.crt' }],
      });
    }
  });

  it.each([
    [['api.tls.caKey=ca.crt'], 'api.tls.caKey needs api.tls.existingSecret'],
    [['api.tls.existingSecret=s', 'api.tls.keyKey='], 'set both certKey and keyKey'],
    [['api.tls.existingSecret=s', 'api.tls.certKey=', 'api.tls.keyKey='], 'set certKey and keyKey'],
  ])('refuses api.tls settings that would be ignored or mount nothing: %s', async (settings, message) => {
    const { code, stderr } = await template([
      ...ciValues('lint'),
      ...settings.flatMap((v) => ['--set-string', v]),
    ]);
    expect(code).not.toBe(0);
    expect(stderr).toContain(message);
  });

  it.each([
    ['kafka.tls', 'the brokers'],
    ['schemaRegistry.tls', 'the registry'],
  ])('refuses %s settings that would be ignored or mount nothing, as api.tls', async (path, peer) => {
    const refused = [
      [[`${path}.caKey=ca.crt`], `${path}.caKey needs ${path}.existingSecret`],
      [[`${path}.existingSecret=s`, `${path}.keyKey=`], `${path}: set both certKey and keyKey`],
      [[`${path}.existingSecret=s`, `${path}.certKey=`, `${path}.keyKey=`], `the CA of ${peer}`],
    ] as const;
    for (const [settings, message] of refused) {
      const { code, stderr } = await template([
        ...ciValues('lint'),
        ...settings.flatMap((v) => ['--set-string', v]),
      ]);
      expect(code).not.toBe(0);
      expect(stderr).toContain(message);
    }
  });

  it('mounts the Kafka and registry client certificates and CAs from existing Secrets, only their paths in the ConfigMaps', async () => {
    const secretsOf = (path: string) =>
      [`${path}.existingSecret=${path.split('.')[0]}-tls`, `${path}.caKey=ca.crt`].flatMap((v) => [
        '--set',
        v,
      ]);
    const { text, objects } = await render([
      ...ciValues('lint'),
      ...secretsOf('kafka.tls'),
      ...secretsOf('schemaRegistry.tls'),
    ]);
    for (const component of ['-connector', '-verifier']) {
      expect(podEnv(objects, component)).toMatchObject({
        KAFKA_TLS_CERT: '/etc/fraudlink/kafka-tls/tls.crt',
        KAFKA_TLS_KEY: '/etc/fraudlink/kafka-tls/tls.key',
        KAFKA_TLS_CA: '/etc/fraudlink/kafka-tls/ca.crt',
        SCHEMA_REGISTRY_TLS_CERT: '/etc/fraudlink/registry-tls/tls.crt',
        SCHEMA_REGISTRY_TLS_KEY: '/etc/fraudlink/registry-tls/tls.key',
        SCHEMA_REGISTRY_TLS_CA: '/etc/fraudlink/registry-tls/ca.crt',
      });
      const pod = (find(objects, 'Deployment', component).spec as { template: { spec: unknown } }).template
        .spec as {
        volumes: { name: string; secret?: unknown }[];
        containers: { volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
      };
      const items = ['tls.crt', 'tls.key', 'ca.crt'].map((key) => ({ key, path: key }));
      expect(pod.volumes.find((v) => v.name === 'kafka-tls')?.secret).toEqual({
        secretName: 'kafka-tls',
        defaultMode: 0o440,
        items,
      });
      expect(pod.volumes.find((v) => v.name === 'registry-tls')?.secret).toEqual({
        secretName: 'schemaRegistry-tls',
        defaultMode: 0o440,
        items,
      });
      expect(pod.containers[0]?.volumeMounts).toEqual(
        expect.arrayContaining([
          { name: 'kafka-tls', mountPath: '/etc/fraudlink/kafka-tls', readOnly: true },
          { name: 'registry-tls', mountPath: '/etc/fraudlink/registry-tls', readOnly: true },
        ]),
      );
    }
    // No PEM anywhere in the manifests: the files stay in the Secrets.
    expect(text).not.toContain('BEGIN');
  });

  it('takes OAuth client credentials for oauthbearer, the client secret from the Secret only', async () => {
    const { text, objects } = await render([
      ...ciValues('lint'),
      ...[
        'kafka.ssl=true',
        'kafka.sasl.mechanism=oauthbearer',
        'kafka.sasl.oauth.tokenUrl=https://idp.example/token',
        'kafka.sasl.oauth.clientId=fraudlink',
        'kafka.sasl.oauth.scope=kafka',
      ].flatMap((v) => ['--set', v]),
    ]);
    const env = podEnv(objects, '-connector');
    expect(env).toMatchObject({
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTH_TOKEN_URL: 'https://idp.example/token',
      KAFKA_SASL_OAUTH_CLIENT_ID: 'fraudlink',
      KAFKA_SASL_OAUTH_SCOPE: 'kafka',
      KAFKA_SASL_OAUTH_CLIENT_SECRET: 'from-secret',
    });
    expect(env).not.toHaveProperty('KAFKA_SASL_USERNAME');
    expect(env).not.toHaveProperty('KAFKA_SASL_PASSWORD');
    const secretRef = containerOf(find(objects, 'Deployment', '-connector')).env.find(
      (e) => e.name === 'KAFKA_SASL_OAUTH_CLIENT_SECRET',
    );
    expect(secretRef?.valueFrom?.secretKeyRef).toEqual({
      name: 'fraudlink-credentials',
      key: 'kafka-sasl-oauth-client-secret',
    });
    expect(text).not.toContain('client-secret-value');
    const missing = await template([...ciValues('lint'), '--set', 'kafka.sasl.mechanism=oauthbearer']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('kafka.sasl.oauth.tokenUrl is required');
  });

  it('refuses clear text and a sandbox upstream by default, and renders the opt-ins when set', async () => {
    for (const component of ['-connector', '-verifier']) {
      expect(podEnv(minimal.objects, component)).toMatchObject({
        ALLOW_INSECURE_TRANSPORT: 'false',
        ALLOW_SANDBOX_UPSTREAM: 'false',
      });
    }
    const { objects } = await render([
      ...ciValues('lint'),
      ...['allowInsecureTransport=true', 'allowSandboxUpstream=true'].flatMap((v) => ['--set', v]),
    ]);
    expect(podEnv(objects, '-verifier')).toMatchObject({
      ALLOW_INSECURE_TRANSPORT: 'true',
      ALLOW_SANDBOX_UPSTREAM: 'true',
    });
  });

  it('limits ingress to the metrics port from the chosen selectors when networkPolicy is on, and has none by default', async () => {
    expect(minimal.objects.filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
    const policy = find(full.objects, 'NetworkPolicy', 'rel-fraudlink');
    expect(policy.spec).toEqual({
      podSelector: {
        matchLabels: { 'app.kubernetes.io/name': 'fraudlink', 'app.kubernetes.io/instance': 'rel' },
      },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
              podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
            },
          ],
          ports: [{ port: 'metrics', protocol: 'TCP' }],
        },
      ],
    });
    // Every fraudlink pod carries the labels it selects, and names its metrics port "metrics".
    for (const component of ['-connector', '-verifier']) {
      const template = (
        find(full.objects, 'Deployment', component).spec as {
          template: { metadata: { labels: Record<string, string> } };
        }
      ).template;
      expect(template.metadata.labels).toMatchObject({
        'app.kubernetes.io/name': 'fraudlink',
        'app.kubernetes.io/instance': 'rel',
      });
      expect(containerOf(find(full.objects, 'Deployment', component)).ports.map((p) => p.name)).toEqual([
        'metrics',
      ]);
    }
  });

  it('pins the image by digest when image.digest is set', async () => {
    const digest = `sha256:${'ab'.repeat(32)}`;
    const { objects } = await render([
      ...ciValues('lint'),
      '--set',
      `image.digest=${digest}`,
      '--set',
      'image.tag=9.9.9',
    ]);
    for (const component of ['-connector', '-verifier']) {
      expect(
        (containerOf(find(objects, 'Deployment', component)) as unknown as { image: string }).image,
      ).toBe(`fraudlink@${digest}`);
    }
    const bad = await template([...ciValues('lint'), '--set', 'image.digest=latest']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('digest');
  });

  it('refuses to render without the required settings, naming each', async () => {
    const { code, stderr } = await template([]);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/api\.baseUrl is required/);
  });

  it('refuses to render without a Secret to take the API key from', async () => {
    const required = ['api.baseUrl=https://x/api', 'kafka.brokers=k:9092', 'schemaRegistry.url=http://r'];
    const { code, stderr } = await template(required.flatMap((v) => ['--set', v]));
    expect(code).not.toBe(0);
    expect(stderr).toContain('secrets.existingSecret');
  });

  it('documents every key of values.yaml with a comment above it', () => {
    const undocumented = uncommentedKeys(readFileSync(join(chartDir, 'values.yaml'), 'utf8'));
    expect(undocumented).toEqual([]);
  });
});

interface SchemaNode {
  type?: string | string[];
  maximum?: number;
  properties?: Record<string, SchemaNode>;
  oneOf?: SchemaNode[];
}

/** A node's integer schema: itself, or its integer alternative (an int-or-string such as maxUnavailable). */
const integerOf = (node: SchemaNode): SchemaNode | undefined =>
  [node, ...(node.oneOf ?? [])].find((n) => [n.type].flat().includes('integer'));

/** Values setting every integer of the schema that has a maximum to that maximum. */
function maximumsOf(node: SchemaNode): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const maximum = integerOf(child)?.maximum;
    if (maximum !== undefined) values[key] = maximum;
    else if (child.properties) {
      const nested = maximumsOf(child);
      if (Object.keys(nested).length > 0) values[key] = nested;
    }
  }
  return values;
}

/** Dotted paths of the schema's integers that have no maximum. */
function unboundedIntegers(node: SchemaNode, path = ''): string[] {
  return Object.entries(node.properties ?? {}).flatMap(([key, child]) => {
    const here = path ? `${path}.${key}` : key;
    const integer = integerOf(child);
    if (integer) return integer.maximum === undefined ? [here] : [];
    return unboundedIntegers(child, here);
  });
}

// Keys nested inside these are Kubernetes objects or free-form maps documented as a whole.
const kubernetesObjects = new Set(['podSecurityContext', 'securityContext', 'resources', 'labels']);

/** values.yaml keys with no comment line directly above them (outside Kubernetes objects). */
function uncommentedKeys(text: string): string[] {
  const missing: string[] = [];
  const path: { indent: number; key: string }[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const m = /^(\s*)([A-Za-z_][\w-]*):/.exec(line);
    if (!m) return;
    const indent = (m[1] as string).length;
    while (path.length > 0 && (path.at(-1) as { indent: number }).indent >= indent) path.pop();
    const inside = path.some((p) => kubernetesObjects.has(p.key));
    path.push({ indent, key: m[2] as string });
    if (!inside && !/^\s*#/.test(lines[i - 1] ?? '')) missing.push(path.map((p) => p.key).join('.'));
  });
  return missing;
}
