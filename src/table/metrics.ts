import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface TableMetrics {
  lookups: Counter<'result'>;
  lookupSeconds: Histogram;
  eventsApplied: Counter;
  recordsRead: Counter;
  recordsSkipped: Counter;
  offsetLag: Gauge;
  rows: Gauge;
}

/** The table's metrics; the gauges read `sample` at each scrape. */
export function createTableMetrics(
  registry: Registry,
  sample: () => { offsetLag: number; rows: number },
): TableMetrics {
  const registers = [registry];
  return {
    lookups: new Counter({
      name: 'fraudlink_table_lookups_total',
      help: 'IBANs looked up in the alert table, by result (hit, miss, invalid)',
      labelNames: ['result'],
      registers,
    }),
    lookupSeconds: new Histogram({
      name: 'fraudlink_table_lookup_seconds',
      help: 'Time to answer one lookup call (one IBAN, or a batch of them)',
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1],
      registers,
    }),
    eventsApplied: new Counter({
      name: 'fraudlink_table_events_applied_total',
      help: 'Alert events (upserts, deactivations, tombstones) applied to the table',
      registers,
    }),
    recordsRead: new Counter({
      name: 'fraudlink_table_records_read_total',
      help: 'Records of the alerts topic read by this process, skipped ones included',
      registers,
    }),
    recordsSkipped: new Counter({
      name: 'fraudlink_table_records_skipped_total',
      help: 'Records of the alerts topic skipped as undecodable or not alert events',
      registers,
    }),
    offsetLag: new Gauge({
      name: 'fraudlink_table_offset_lag',
      help: "Records between the table's position and the end of the alerts topic",
      registers,
      collect() {
        this.set(sample().offsetLag);
      },
    }),
    rows: new Gauge({
      name: 'fraudlink_table_rows',
      help: 'Active alerts in the table',
      registers,
      collect() {
        this.set(sample().rows);
      },
    }),
  };
}
