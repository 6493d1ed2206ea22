// The lookup baseline of the table benchmark: a bare node:http server answering GET
// /v1/alerts/{iban} from a Map, run in a process of its own as the table service is. It reads the
// table from BARE_TABLE_FILE (JSON Lines of the answers, as the table service would give them),
// listens on 127.0.0.1:BARE_PORT and prints `{"url": ...}` on stdout once it does.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { countEnv, requiredEnv } from './env.ts';

const PREFIX = '/v1/alerts/';

function main(): void {
  const table = new Map<string, unknown>();
  for (const line of readFileSync(requiredEnv('BARE_TABLE_FILE'), 'utf8').split('\n')) {
    if (!line) continue;
    const alert = JSON.parse(line) as { iban: string };
    table.set(alert.iban, alert);
  }
  const updatedAt = new Date().toISOString();
  const server = createServer((req, res) => {
    const url = req.url ?? '';
    if (req.method !== 'GET' || !url.startsWith(PREFIX)) {
      res.writeHead(404).end();
      return;
    }
    const iban = decodeURIComponent(url.slice(PREFIX.length)).replace(/\s+/g, '').toUpperCase();
    const alert = table.get(iban);
    const body = JSON.stringify(alert ?? { code: 'NOT_FOUND', message: 'no active alert' });
    res.writeHead(alert ? 200 : 404, {
      'content-type': 'application/json',
      'x-table-offset-lag': '0',
      'x-table-updated-at': updatedAt,
    });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(countEnv('BARE_PORT'), '127.0.0.1');
  void once(server, 'listening').then(() => {
    process.stdout.write(
      `${JSON.stringify({ url: `http://127.0.0.1:${countEnv('BARE_PORT')}`, rows: table.size })}\n`,
    );
  });
  process.once('SIGTERM', () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}

if (import.meta.main) main();
