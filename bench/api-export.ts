// The export page is the connector's hot path. This walks the same sandbox feed with the API client
// and with a bare undici fetch + JSON.parse (no error mapping, no envelope check, no retries), side
// by side in one run, and prices a per-row zod parse that the client deliberately does not do.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { z } from 'zod';
import { createApiClient } from '../src/api/index.ts';
import { createSandbox } from '../src/sandbox/index.ts';

const ALERTS = 100_000;
const PAGE_SIZE = 5000;
const ROUNDS = 5;

interface Figures {
  rows: number;
  bytes: number;
  ms: number;
}

async function walk(
  next: (
    cursor: string | undefined,
  ) => Promise<{ rows: unknown[]; nextCursor: string | null; bytes: number }>,
): Promise<Figures> {
  const started = performance.now();
  let cursor: string | undefined;
  let rows = 0;
  let bytes = 0;
  for (;;) {
    const page = await next(cursor);
    rows += page.rows.length;
    bytes += page.bytes;
    if (page.nextCursor === null) break;
    cursor = page.nextCursor;
  }
  return { rows, bytes, ms: performance.now() - started };
}

const rowSchema = z.looseObject({
  id: z.union([z.string(), z.number()]),
  iban: z.string(),
  bic: z.string().nullable(),
  qualification: z.string(),
  reportsCount: z.number().int(),
  updatedAt: z.union([z.string(), z.number()]),
  isActive: z.boolean(),
});

function line(name: string, f: Figures, base?: Figures): string {
  const rate = Math.round(f.rows / (f.ms / 1000));
  const mbps = (f.bytes / 1e6 / (f.ms / 1000)).toFixed(1);
  const ratio = base ? `  ${(f.ms / base.ms).toFixed(2)}× the time of bare fetch` : '';
  return `${name.padEnd(34)} ${String(rate).padStart(9)} rows/s  ${mbps.padStart(6)} MB/s${ratio}`;
}

function best(all: Figures[]): Figures {
  return all.reduce((a, b) => (b.ms < a.ms ? b : a));
}

/**
 * The same comparison against one page served from memory, so that the figures are the clients'
 * own cost (HTTP, reading, parsing) rather than the sandbox's.
 */
async function staticPage(body: string, rows: number): Promise<void> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = createApiClient({ baseUrl: url, apiKey: 'k', timeoutMs: 30_000 });
  const times = async (n: number, once: () => Promise<number>): Promise<Figures> => {
    const started = performance.now();
    let bytes = 0;
    for (let i = 0; i < n; i++) bytes += await once();
    return { rows: rows * n, bytes, ms: performance.now() - started };
  };
  const viaClient = () => times(40, async () => (await client.exportPage({})).bytes ?? 0);
  const bare = () =>
    times(40, async () => {
      const res = await fetch(`${url}/sharing/v1/alerts/export`, { headers: { 'x-api-key': 'k' } });
      const text = await res.text();
      JSON.parse(text);
      return Buffer.byteLength(text);
    });
  try {
    await bare();
    await viaClient();
    const runs = { client: [] as Figures[], bare: [] as Figures[] };
    for (let i = 0; i < ROUNDS; i++) {
      runs.bare.push(await bare());
      runs.client.push(await viaClient());
    }
    const base = best(runs.bare);
    console.log(
      `one ${rows}-row page (${(Buffer.byteLength(body) / 1e6).toFixed(2)} MB) served from memory, 40 requests`,
    );
    console.log(line('bare undici fetch + JSON.parse', base));
    console.log(line('api client exportPage', best(runs.client), base));
  } finally {
    await client.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export async function run(): Promise<void> {
  const sandbox = createSandbox({
    port: 0,
    alerts: ALERTS,
    pageSize: PAGE_SIZE,
    rateLimit: 0,
    changesPerSec: 0,
  });
  const { url, apiKeys } = await sandbox.start();
  const apiKey = apiKeys[0] as string;
  const client = createApiClient({ baseUrl: url, apiKey, timeoutMs: 30_000 });
  const viaClient = () =>
    walk(async (cursor) => {
      const page = await client.exportPage(cursor === undefined ? {} : { cursor });
      return { ...page, bytes: page.bytes ?? 0 };
    });
  const bare = () =>
    walk(async (cursor) => {
      const qs = cursor === undefined ? '' : `?cursor=${encodeURIComponent(cursor)}`;
      const res = await fetch(`${url}/sharing/v1/alerts/export${qs}`, { headers: { 'x-api-key': apiKey } });
      const text = await res.text();
      const body = JSON.parse(text) as { rows: unknown[]; nextCursor: string | null };
      return { ...body, bytes: Buffer.byteLength(text) };
    });
  const withZod = () =>
    walk(async (cursor) => {
      const page = await client.exportPage(cursor === undefined ? {} : { cursor });
      for (const row of page.rows) rowSchema.safeParse(row);
      return { ...page, bytes: page.bytes ?? 0 };
    });
  try {
    // Warm-up: JIT, keep-alive sockets, the sandbox's own caches.
    await bare();
    await viaClient();
    const runs = { client: [] as Figures[], bare: [] as Figures[], zod: [] as Figures[] };
    for (let i = 0; i < ROUNDS; i++) {
      runs.bare.push(await bare());
      runs.client.push(await viaClient());
      runs.zod.push(await withZod());
    }
    const base = best(runs.bare);
    console.log(`export of ${base.rows} rows in pages of ${PAGE_SIZE}, best of ${ROUNDS} walks each`);
    console.log(line('bare undici fetch + JSON.parse', base));
    console.log(line('api client exportPage', best(runs.client), base));
    console.log(line('client + zod parse of every row', best(runs.zod), base));
    const page = await client.exportPage({});
    await staticPage(JSON.stringify({ rows: page.rows, nextCursor: page.nextCursor }), page.rows.length);
  } finally {
    await client.close();
    await sandbox.stop();
  }
}

if (import.meta.main) await run();
