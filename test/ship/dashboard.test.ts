import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createConnectorMetrics } from '../../src/connector/metrics.ts';
import { createTableMetrics } from '../../src/table/metrics.ts';
import { createVerifierMetrics } from '../../src/verifier/metrics.ts';
import { chartDir, root } from './helm.ts';

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
  gridPos: { x: number; y: number; w: number; h: number };
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; query?: string | { query: string }; definition?: string }[] };
}

const dashboard = JSON.parse(
  readFileSync(join(chartDir, 'dashboards', 'fraudlink.json'), 'utf8'),
) as Dashboard;

/** Every PromQL expression of the dashboard: panel queries and template variable queries. */
const expressions = [
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
  ...dashboard.templating.list.flatMap((v) => (typeof v.query === 'object' ? [v.query.query] : [])),
];

/** A registry holding every metric of the code, from each component's metrics factory. */
function allMetrics(): Registry {
  const registry = new Registry();
  createConnectorMetrics(registry);
  createVerifierMetrics(registry);
  createTableMetrics(registry, () => ({ offsetLag: 0, rows: 0 }));
  return registry;
}

/** The series each metric of the code exports, with its label names (histograms add le). */
function exportedSeries(): Map<string, string[]> {
  const registry = allMetrics();
  const series = new Map<string, string[]>();
  for (const metric of registry.getMetricsAsArray()) {
    const { name, labelNames = [] } = metric as unknown as { name: string; labelNames?: string[] };
    const type = (metric as unknown as { type: string }).type;
    if (type === 'histogram') {
      series.set(`${name}_bucket`, [...labelNames, 'le']);
      series.set(`${name}_sum`, labelNames);
      series.set(`${name}_count`, labelNames);
    } else {
      series.set(name, labelNames);
    }
  }
  return series;
}

/** Metric names declared anywhere in src/ (`name: 'fraudlink_...'`), so no metrics module is missed. */
function declaredInSource(dir = join(root, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return declaredInSource(path);
    if (!entry.name.endsWith('.ts')) return [];
    return [...readFileSync(path, 'utf8').matchAll(/name: '(fraudlink_[a-z0-9_]+)'/g)].map(
      (m) => m[1] as string,
    );
  });
}

// Labels Prometheus adds when it scrapes a pod (Kubernetes service discovery, ServiceMonitor).
const targetLabels = new Set(['namespace', 'pod', 'instance', 'job', 'container', 'service']);

describe('grafana dashboard', () => {
  it('is a dashboard JSON with a uid, panels on a 24-column grid and a Prometheus data source variable', () => {
    expect(dashboard.uid).toBe('fraudlink-overview');
    expect(dashboard.panels.length).toBeGreaterThan(10);
    for (const p of dashboard.panels) expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'namespace']);
  });

  it('queries only metrics the code exports, under their exported names', () => {
    const series = exportedSeries();
    const queried = new Set(
      expressions.flatMap((e) => [...e.matchAll(/\bfraudlink_[a-z0-9_]+/g)].map((m) => m[0])),
    );
    expect(queried.size).toBeGreaterThan(15);
    expect([...queried].filter((name) => !series.has(name))).toEqual([]);
  });

  it('the metrics factories export every metric the source declares', () => {
    const registry = allMetrics();
    const exported = new Set(
      registry.getMetricsAsArray().map((m) => (m as unknown as { name: string }).name),
    );
    const declared = declaredInSource();
    expect(declared.length).toBeGreaterThan(15);
    expect(declared.filter((name) => !exported.has(name))).toEqual([]);
  });

  it('groups and filters only by labels the metrics carry or the scrape adds', () => {
    const series = exportedSeries();
    const problems: string[] = [];
    for (const expr of expressions) {
      const metrics = [...expr.matchAll(/\b(fraudlink_[a-z0-9_]+)\{([^}]*)\}/g)];
      for (const [, name, selector] of metrics) {
        const labels = series.get(name as string) ?? [];
        for (const [, label] of (selector as string).matchAll(/([a-z_]+)\s*=~?/g)) {
          if (!labels.includes(label as string) && !targetLabels.has(label as string))
            problems.push(`${name} has no label ${label}`);
        }
      }
      const known = new Set([
        ...metrics.flatMap(([, name]) => series.get(name as string) ?? []),
        ...targetLabels,
      ]);
      for (const [, list] of expr.matchAll(/by \(([^)]*)\)/g)) {
        for (const label of (list as string).split(',').map((l) => l.trim())) {
          if (!known.has(label)) problems.push(`"${expr}" groups by unknown label ${label}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it.each([
    [
      'publish rate, feed lag, DLQ, verification outcomes and verification latency',
      [
        'fraudlink_connector_rows_published_total',
        'fraudlink_connector_feed_lag_seconds',
        'fraudlink_connector_rows_rejected_total',
        'fraudlink_verifier_dlq_total',
        'fraudlink_verifier_requests_total',
        'fraudlink_verifier_upstream_latency_seconds_bucket',
      ],
    ],
    [
      'table lookups by result, lookup latency p99, events applied, offset lag and rows',
      [
        'sum by (result) (rate(fraudlink_table_lookups_total',
        'histogram_quantile(0.99, sum by (le) (rate(fraudlink_table_lookup_seconds_bucket',
        'rate(fraudlink_table_events_applied_total',
        'fraudlink_table_offset_lag',
        'fraudlink_table_rows',
      ],
    ],
  ])('covers %s', (_, queries) => {
    const queried = expressions.join('\n');
    for (const query of queries) expect(queried).toContain(query);
  });
});
