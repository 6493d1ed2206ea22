import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { isLoopbackHost } from '../config/clear-text.ts';
import { type SharedRule, takenBy } from '../config/schema.ts';
import { silentLogger } from '../logger.ts';
import { holderNameFor } from './data.ts';
import { FaultState, RateLimiter } from './faults.ts';
import { RequestLog } from './request-log.ts';
import { createListener } from './server.ts';
import type { Sandbox, SandboxOptions } from './types.ts';
import { World } from './world.ts';

export type { ExportRow, Qualification } from './alerts.ts';
export { holderNameFor } from './data.ts';
export type { SandboxFaults } from './faults.ts';
export type { SandboxRequest } from './request-log.ts';
export type { Sandbox, SandboxOptions, SandboxTls } from './types.ts';
export { matchName, normaliseName } from './verify.ts';
export {
  INJECTABLE_KINDS,
  MALFORMED_KINDS,
  type MalformedKind,
  OVERSIZED_KINDS,
  OVERSIZED_ROW_BYTES,
  OVERSIZED_ROW_DEPTH,
} from './world.ts';

/** The key the sandbox takes when given none: one tenant. */
export const SANDBOX_API_KEY = 'sandbox-key';

/**
 * The variables that point a component at the sandbox at `url`, with its default key. The sandbox
 * marks its answers; without ALLOW_SANDBOX_UPSTREAM a component refuses it as its upstream.
 */
export function sandboxUpstreamEnv(url: string) {
  return { API_BASE_URL: url, ALLOW_SANDBOX_UPSTREAM: 'true', API_KEY: SANDBOX_API_KEY };
}

const REQUEST_LOG_SIZE = 100_000;
const TICK_MS = 500;

function checkOptions(o: SandboxOptions): void {
  const counts: [string, number | undefined, number][] = [
    ['alerts', o.alerts, 50_000_000],
    ['port', o.port, 65_535],
    ['changesPerSec', o.changesPerSec, 1_000_000],
    ['pageSize', o.pageSize, 1_000_000],
    ['rateLimit', o.rateLimit, 1_000_000],
    ['seed', o.seed, 2 ** 32 - 1],
  ];
  for (const [name, value, max] of counts) {
    if (value !== undefined && (!Number.isInteger(value) || value < 0 || value > max)) {
      throw new RangeError(`sandbox option ${name} must be an integer from 0 to ${max}`);
    }
  }
  if (o.pageSize === 0) throw new RangeError('sandbox option pageSize must be at least 1');
  if (o.basePath !== undefined && !/^(\/[\w.~-]+)*$/.test(o.basePath)) {
    throw new RangeError('sandbox option basePath must look like /api (no trailing slash)');
  }
}

/**
 * `value` under a rule of the configuration (the CLI's flags follow them too), trimmed as the
 * configuration trims its variables: an empty host listens on all interfaces, a cursor named
 * updatedAfter would collide with the export's other parameter, and a key with a space, or one
 * with spaces around it, would match no client's header (HTTP trims header values).
 */
function textOption(name: string, value: string, rule: SharedRule): string {
  const taken = takenBy(rule, value);
  if ('problem' in taken) throw new RangeError(`sandbox option ${name} ${taken.problem}`);
  return taken.value;
}

/** A local, faithful stand-in for the upstream service; see README.md beside this file. */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  checkOptions(options);
  const host = textOption('host', options.host ?? '127.0.0.1', 'nonEmpty');
  const cursorParam = textOption('cursorParam', options.cursorParam ?? 'cursor', 'cursorParam');
  const given = options.apiKeys && options.apiKeys.length > 0 ? options.apiKeys : [SANDBOX_API_KEY];
  const apiKeys = given.map((key) => textOption('apiKeys', key, 'apiKey'));
  if (new Set(apiKeys).size !== apiKeys.length) throw new RangeError('sandbox API keys must be distinct');
  const adminToken =
    options.adminToken === undefined ? undefined : textOption('adminToken', options.adminToken, 'apiKey');
  if (adminToken === undefined && !isLoopbackHost(host)) {
    throw new RangeError(
      `sandbox option adminToken is required when host is not loopback (${host}): /__admin would be open to anyone who reaches it`,
    );
  }
  const now = options.now ?? Date.now;
  const logger = options.logger ?? silentLogger();
  const seed = options.seed ?? 1;
  const world = new World({ apiKeys, alerts: options.alerts ?? 1000, seed, now });
  const faults = new FaultState(options.faults ?? {}, seed);
  const log = new RequestLog(REQUEST_LOG_SIZE);
  const applyChanges = (count: number) => world.applyChanges(count, faults.current.malformedRowRate);
  const listener = createListener({
    world,
    faults,
    limiter: new RateLimiter(options.rateLimit ?? 10, now),
    log,
    logger,
    basePath: options.basePath ?? '',
    cursorParam,
    pageSize: options.pageSize ?? 500,
    now,
    applyChanges,
    adminToken,
  });
  let server: Server | undefined;
  let url = '';
  let ticker: NodeJS.Timeout | undefined;

  /** Changes come in ticks: each tick's changes share one millisecond, as real bursts do. */
  const startChanges = (perSec: number) => {
    let owed = 0;
    ticker = setInterval(() => {
      owed += (perSec * TICK_MS) / 1000;
      const count = Math.floor(owed);
      owed -= count;
      if (count > 0) applyChanges(count);
    }, TICK_MS);
    ticker.unref();
  };

  return {
    async start() {
      if (server) throw new Error('sandbox already started');
      const tls = options.tls;
      server = tls
        ? createHttpsServer(
            {
              cert: tls.cert,
              key: tls.key,
              ...(tls.ca && { ca: tls.ca }),
              requestCert: tls.requestClientCert ?? false,
              rejectUnauthorized: tls.requestClientCert ?? false,
            },
            listener,
          )
        : createHttpServer(listener);
      server.keepAliveTimeout = 60_000;
      const s = server;
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(options.port ?? 8080, host, () => {
          s.off('error', reject);
          resolve();
        });
      });
      const { port, address } = s.address() as AddressInfo;
      const urlHost = address.includes(':') ? `[${address}]` : address;
      url = `${tls ? 'https' : 'http'}://${urlHost}:${port}${options.basePath ?? ''}`;
      const perSec = options.changesPerSec ?? 5;
      if (perSec > 0) startChanges(perSec);
      logger.info(
        { url, alerts: world.alerts.length, tenants: apiKeys.length, changesPerSec: perSec },
        'sandbox ready',
      );
      return { url, apiKeys: [...apiKeys] };
    },
    async stop() {
      if (ticker) clearInterval(ticker);
      ticker = undefined;
      const s = server;
      server = undefined;
      if (!s) return;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      s.closeAllConnections();
      await closed;
      logger.info('sandbox stopped');
    },
    get url() {
      return url;
    },
    setFaults: (partial) => faults.set(partial),
    faults: () => faults.current,
    requestLog: () => log.entries(),
    clearRequestLog: () => log.clear(),
    applyChanges: (count) => {
      if (!Number.isInteger(count) || count < 0) throw new RangeError('count must be a non-negative integer');
      applyChanges(count);
    },
    injectMalformedRow: (kind) => world.injectMalformed(kind),
    currentRows: () => world.currentRows(),
    holderName: (iban) => holderNameFor(iban),
    tenants: () =>
      world.institutions
        .filter((i) => i.apiKey !== undefined)
        .map((i) => ({ apiKey: i.apiKey as string, institution: i.id, bic: i.bic })),
  };
}
