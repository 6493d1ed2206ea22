import { Registry } from 'prom-client';
import type { TableConfig } from '../config/index.ts';
import type { Logger } from '../logger.ts';
import { createOpsServer } from '../observability/http-server.ts';
import { type StartOptions, startUp } from '../start-up.ts';
import { tableRoutes } from './http.ts';
import { openAlertTable } from './table.ts';

export { MAX_BODY_BYTES, MAX_LOOKUP_IBANS } from './http.ts';
export {
  type AlertList,
  type AlertTable,
  type AlertTableConfig,
  type AlertTableOptions,
  type ListQuery,
  type LookupResult,
  MAX_PAGE,
  openAlertTable,
  type TableStatus,
} from './table.ts';

export interface RunningTableService {
  /** The HTTP base address: /v1, the page at /, /metrics, /healthz, /readyz. */
  url: string;
  /** Resolves once stopped; rejects when the store fails. */
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Opens the alert table at TABLE_DB_PATH, follows ALERTS_TOPIC into it, and serves lookups, the page
 * and the ops endpoints on HTTP_PORT. `signal` ends start-up at once (AbortedError), what it had
 * created released; once started, stop().
 */
export async function startTableService(
  config: TableConfig,
  logger: Logger,
  { signal }: StartOptions = {},
): Promise<RunningTableService> {
  return startUp(signal, async ({ step, created }) => {
    const log = logger.child({ component: 'table' });
    const metrics = new Registry();
    const table = created(
      await openAlertTable(
        {
          kafka: config.kafka,
          registry: config.registry,
          alertsTopic: config.alertsTopic,
          dbPath: config.dbPath,
        },
        { logger, metrics },
      ),
      (t) => t.close(),
    );
    const ops = createOpsServer({
      host: config.http.host,
      port: config.http.port,
      registry: metrics,
      healthy: () => true,
      ready: () => {
        const { ready, reason } = table.status();
        return reason === undefined ? { ready } : { ready, reason };
      },
      logger: log,
      routes: tableRoutes({ table, apiKeys: config.apiKeys, logger: log }),
    });
    created(ops, (o) => o.stop());
    const { url } = await step('starting the HTTP server', ops.start());
    log.info(
      { url, dbPath: config.dbPath, apiKeysRequired: config.apiKeys !== undefined },
      'alert table service started',
    );
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        await ops.stop();
        await table.close();
      })();
      return stopping;
    };
    // A failed store ends the service: the server goes too, and done rejects with the failure.
    const done = table.done.then(
      () => stop(),
      async (err: unknown) => {
        await stop();
        throw err;
      },
    );
    done.catch(() => {});
    return {
      url,
      done,
      async stop() {
        await stop();
        await done.catch(() => {});
      },
    };
  });
}
