export interface Snapshot {
  published: number;
  rejected: number;
  lag: number | null;
  rate: number;
  lastVerification: string;
  at: number;
}

/** The few connector figures the live view shows, read from its Prometheus endpoint. */
export async function scrape(
  url: string,
): Promise<{ published: number; rejected: number; lag: number | null }> {
  const text = await (await fetch(url)).text();
  const sum = (name: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(name))
      .reduce((total, l) => total + Number(l.split(' ').at(-1)), 0);
  const lagLine = text.split('\n').find((l) => l.startsWith('fraudlink_connector_feed_lag_seconds '));
  return {
    published: sum('fraudlink_connector_rows_published_total'),
    rejected: sum('fraudlink_connector_rows_rejected_total'),
    lag: lagLine ? Number(lagLine.split(' ')[1]) : null,
  };
}

export function renderStatus(s: Snapshot): string {
  return [
    `events published: ${s.published} (${s.rate.toFixed(1)}/s)`,
    `feed lag: ${s.lag === null ? '-' : `${s.lag.toFixed(1)} s`}`,
    `DLQ: ${s.rejected}`,
    `last verification: ${s.lastVerification}`,
  ].join('\n');
}
