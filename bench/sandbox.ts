// Sandbox export throughput: one client walking a 200,000-row feed in 1,000-row pages, beside the
// ceiling of this machine for the same bytes (a bare node:http server answering a static,
// pre-built page of the same size, read with node's fetch + JSON.parse), in one run. Also the time
// and memory to seed a 1,000,000-alert backlog, which the connector benchmark relies on.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { createSandbox } from '../src/sandbox/index.ts';

const ROWS = 200_000;
const PAGE = 1000;
const ROUNDS = 3;

type Page = { rows: unknown[]; nextCursor: string | null };
type Fetcher = (cursor: string | undefined) => Promise<Page>;

/** Rows per second of one walk to the end. */
async function walk(next: Fetcher): Promise<{ rows: number; perSec: number }> {
  const started = performance.now();
  let rows = 0;
  let cursor: string | undefined;
  do {
    const page = await next(cursor);
    rows += page.rows.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return { rows, perSec: rows / ((performance.now() - started) / 1000) };
}

async function best(next: Fetcher): Promise<{ rows: number; perSec: number }> {
  await walk(next); // warm-up: JIT and keep-alive sockets
  const runs = [];
  for (let i = 0; i < ROUNDS; i++) runs.push(await walk(next));
  return runs.sort((a, b) => b.perSec - a.perSec)[0] as { rows: number; perSec: number };
}

/** A bare node:http server answering the same pre-built page: the ceiling of server + client here. */
async function staticServer(body: string, pages: number): Promise<{ url: string; close(): Promise<void> }> {
  const bytes = Buffer.from(body);
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes.length });
    res.end(bytes);
    void req;
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  void pages;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function seedFigures(alerts: number): Promise<string> {
  const heapBefore = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const started = performance.now();
  const sandbox = createSandbox({ alerts, changesPerSec: 0, port: 0 });
  const ms = performance.now() - started;
  const mem = process.memoryUsage();
  const mb = (mem.heapUsed + mem.arrayBuffers - heapBefore) / 1e6;
  void sandbox;
  return `seeding ${alerts.toLocaleString('en-US')} alerts: ${Math.round(ms)} ms, ~${Math.round(mb)} MB heap + typed arrays`;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

export async function run(): Promise<void> {
  const sandbox = createSandbox({ alerts: ROWS, pageSize: PAGE, rateLimit: 0, changesPerSec: 0, port: 0 });
  const { url } = await sandbox.start();
  const headers = { 'x-api-key': 'sandbox-key' };
  const path = (cursor: string | undefined) =>
    `${url}/sharing/v1/alerts/export${cursor === undefined ? '' : `?cursor=${cursor}`}`;
  const viaUndici: Fetcher = async (cursor) => {
    const res = await request(path(cursor), { headers });
    return JSON.parse(await res.body.text()) as Page;
  };
  const viaFetch: Fetcher = async (cursor) => {
    const res = await fetch(path(cursor), { headers });
    return JSON.parse(await res.text()) as Page;
  };
  try {
    const first = await (await fetch(path(undefined), { headers })).text();
    const ceilingServer = await staticServer(first, ROWS / PAGE);
    let served = 0;
    // The static server never ends the walk itself: stop after as many pages as the feed has.
    const viaStatic: Fetcher = async () => {
      const res = await fetch(ceilingServer.url);
      const page = JSON.parse(await res.text()) as Page;
      served += page.rows.length;
      if (served >= ROWS) {
        served = 0;
        return { rows: page.rows, nextCursor: null };
      }
      return { rows: page.rows, nextCursor: 'next' };
    };
    const undiciRun = await best(viaUndici);
    const fetchRun = await best(viaFetch);
    const ceiling = await best(viaStatic);
    await ceilingServer.close();
    console.log(
      `export walk of ${fmt(undiciRun.rows)} rows in ${PAGE}-row pages (${fmt(Buffer.byteLength(first))} bytes a page), best of ${ROUNDS}`,
    );
    console.log(`  sandbox, undici request + JSON.parse   ${fmt(undiciRun.perSec).padStart(10)} rows/s`);
    console.log(`  sandbox, node fetch + JSON.parse       ${fmt(fetchRun.perSec).padStart(10)} rows/s`);
    console.log(
      `  static page, node fetch + JSON.parse   ${fmt(ceiling.perSec).padStart(10)} rows/s  (ceiling)`,
    );
    console.log(`  ratio sandbox(undici) / ceiling        ${(undiciRun.perSec / ceiling.perSec).toFixed(2)}`);
    console.log(`  ratio sandbox(fetch) / ceiling         ${(fetchRun.perSec / ceiling.perSec).toFixed(2)}`);
  } finally {
    await sandbox.stop();
  }
  console.log(await seedFigures(1_000_000));
}

if (import.meta.main) await run();
