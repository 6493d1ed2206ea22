export interface Snapshot {
  published: number;
  rejected: number;
  lag: number | null;
  rate: number;
  lastVerification: string;
  /** The last IBAN looked up over the table's HTTP API, and its answer. */
  lastLookup: string;
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
    `table lookup: ${s.lastLookup}`,
  ].join('\n');
}

/**
 * Picks an IBAN that has an alert from the table's listing and looks it up over HTTP as a client
 * would; undefined while the table holds none yet or is not reachable.
 */
export async function lookUpOneAlert(tableUrl: string): Promise<string | undefined> {
  try {
    const listing = await fetch(`${tableUrl}/v1/alerts?limit=50`);
    if (!listing.ok) return undefined;
    const { alerts } = (await listing.json()) as { alerts: { iban: string }[] };
    const iban = alerts[Math.floor(Math.random() * alerts.length)]?.iban;
    if (!iban) return undefined;
    const path = `/v1/alerts/${iban}`;
    const answer = await fetch(`${tableUrl}${path}`);
    return `GET ${path} -> ${answer.status} ${await answer.text()}`;
  } catch {
    return undefined;
  }
}
