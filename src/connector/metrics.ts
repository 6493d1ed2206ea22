import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export const ConnectorStates = [
  'starting',
  'running',
  'caught_up',
  'backing_off',
  'waiting_for_kafka',
  'stopped',
] as const;
export type ConnectorState = (typeof ConnectorStates)[number];

export interface ConnectorMetrics {
  published: Counter<'type'>;
  rejected: Counter<'code'>;
  deduplicated: Counter;
  pages: Counter;
  throttled: Counter;
  upstreamRetries: Counter<'code'>;
  backoffSeconds: Counter;
  commitSeconds: Histogram;
  transactionRows: Histogram;
  /** Epoch ms of the newest `updatedAt` published, and of the last committed cursor. */
  setNewestPublished(updatedAt: number): void;
  setCursorCommitted(at: number): void;
  setState(state: ConnectorState): void;
  readonly state: ConnectorState;
}

/** The connector's Prometheus metrics, registered on the given registry (one per process). */
export function createConnectorMetrics(registry: Registry, now: () => number = Date.now): ConnectorMetrics {
  const registers = [registry];
  let newestPublished: number | null = null;
  let cursorCommittedAt: number | null = null;
  let state: ConnectorState = 'starting';
  new Gauge({
    name: 'fraudlink_connector_feed_lag_seconds',
    help: 'Now minus the newest updatedAt published to the alerts topic',
    registers,
    collect() {
      if (newestPublished !== null) this.set((now() - newestPublished) / 1000);
    },
  });
  new Gauge({
    name: 'fraudlink_connector_cursor_age_seconds',
    help: 'Time since the cursor record was last committed',
    registers,
    collect() {
      if (cursorCommittedAt !== null) this.set((now() - cursorCommittedAt) / 1000);
    },
  });
  const stateGauge = new Gauge({
    name: 'fraudlink_connector_state',
    help: 'Current state of the connector loop (1 for the current state)',
    labelNames: ['state'],
    registers,
  });
  const setState = (next: ConnectorState) => {
    state = next;
    for (const s of ConnectorStates) stateGauge.set({ state: s }, s === next ? 1 : 0);
  };
  setState('starting');
  return {
    published: new Counter({
      name: 'fraudlink_connector_rows_published_total',
      help: 'Feed rows published as alert events, by event type',
      labelNames: ['type'],
      registers,
    }),
    rejected: new Counter({
      name: 'fraudlink_connector_rows_rejected_total',
      help: 'Feed rows sent to the DLQ, by error code',
      labelNames: ['code'],
      registers,
    }),
    deduplicated: new Counter({
      name: 'fraudlink_connector_rows_deduplicated_total',
      help: 'Rows served again at the high-water mark and recognised as already handled',
      registers,
    }),
    pages: new Counter({ name: 'fraudlink_connector_pages_total', help: 'Export pages read', registers }),
    throttled: new Counter({
      name: 'fraudlink_connector_upstream_throttled_total',
      help: 'Export requests answered 429 by the upstream',
      registers,
    }),
    upstreamRetries: new Counter({
      name: 'fraudlink_connector_upstream_retries_total',
      help: 'Export requests retried, by error code',
      labelNames: ['code'],
      registers,
    }),
    backoffSeconds: new Counter({
      name: 'fraudlink_connector_backoff_seconds_total',
      help: 'Time spent waiting in backoff before retrying the upstream or Kafka',
      registers,
    }),
    commitSeconds: new Histogram({
      name: 'fraudlink_connector_transaction_commit_seconds',
      help: 'Time to send and commit one Kafka transaction (events, DLQ records and cursor)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    transactionRows: new Histogram({
      name: 'fraudlink_connector_transaction_rows',
      help: 'Rows (events and DLQ records) per committed transaction',
      buckets: [1, 10, 100, 500, 1000, 2500, 5000, 10000],
      registers,
    }),
    setNewestPublished(updatedAt) {
      if (newestPublished === null || updatedAt > newestPublished) newestPublished = updatedAt;
    },
    setCursorCommitted(at) {
      cursorCommittedAt = at;
    },
    setState,
    get state() {
      return state;
    },
  };
}
