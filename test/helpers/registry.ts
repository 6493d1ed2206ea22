import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';
import { stackEnv } from './stack.ts';

/**
 * A proxy to the registry at `target`, to point a component's SCHEMA_REGISTRY_URL at: it forwards
 * every request as it is and notes those naming `subject` (method and path) in `asked`; the first
 * `drop` of those it cuts off instead, their connection closed unanswered, as by a registry going
 * down. With `stall` it leaves them all unanswered, as a registry that hangs; `firstAsked` resolves
 * at the first.
 */
export async function registryProxy(target: string, subject: string, { drop = 0, stall = false } = {}) {
  const registry = new URL(target);
  const asked: string[] = [];
  const firstAsked = Promise.withResolvers<void>();
  let dropped = 0;
  const server = createServer((req, res) => {
    if (req.url?.includes(subject)) {
      asked.push(`${req.method} ${req.url}`);
      firstAsked.resolve();
      if (stall) return;
      if (dropped < drop) {
        dropped++;
        req.socket.destroy();
        return;
      }
    }
    const forward = request(
      {
        host: registry.hostname,
        port: registry.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', (err) => res.destroy(err));
    req.pipe(forward);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onTestFinished(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}${registry.pathname}`, asked, firstAsked: firstAsked.promise };
}

/** An AlertUpserted event value, as the connector writes one. */
export const ALERT_UPSERTED = {
  eventId: 'e'.repeat(64),
  alertId: 'a-1',
  iban: 'DE89370400440532013000',
  bic: null,
  qualification: 'CONFIRMED',
  qualificationRaw: null,
  reportsCount: 2,
  updatedAt: 1795339800123,
  observedAt: 1795339900456,
};

/** A JSON schema using `format: date-time`, which the registry client's JSON support (ajv) cannot build. */
export const DATE_TIME_JSON_SCHEMA = JSON.stringify({
  type: 'object',
  properties: { at: { type: 'string', format: 'date-time' } },
});

/**
 * `schema` registered under `subject` of the stack's registry straight through its API, as another
 * team's serializer would register it (any type, references to other subjects); its id.
 */
export async function registeredSchema(
  subject: string,
  schemaType: 'AVRO' | 'JSON' | 'PROTOBUF',
  schema: string,
  references: { name: string; subject: string; version: number }[] = [],
): Promise<number> {
  const answer = await fetch(`${stackEnv().SCHEMA_REGISTRY_URL}/subjects/${subject}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schemaType, schema, references }),
  });
  if (!answer.ok) throw new Error(`registering ${subject} answered ${answer.status}: ${await answer.text()}`);
  return ((await answer.json()) as { id: number }).id;
}
