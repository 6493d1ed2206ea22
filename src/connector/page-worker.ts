/**
 * The connector's page worker thread: fetches export pages, parses, maps and Avro-encodes their rows
 * (preparePage) and hands each page to the main thread as transferred buffers. The main thread keeps
 * only the cursor and Kafka. Started by workerPageSource (worker-pages.ts); not a public entry point.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createApiClient } from '../api/index.ts';
import { AbortedError } from '../errors.ts';
import { avroEncoder } from '../kafka/avro-encoder.ts';
import { createLogger } from '../logger.ts';
import { loadSchema, SchemaNames } from '../schemas.ts';
import { localPageSource, readAhead } from './pages.ts';
import { transferablesOf } from './prepare.ts';
import { type PageWorkerData, serializeError, type ToMain, type ToWorker } from './worker-protocol.ts';

const port = parentPort;
if (!port) throw new Error('page-worker.ts runs as a worker thread only');
const data = workerData as PageWorkerData;
const post = (message: ToMain, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

const logger = createLogger({ level: data.logLevel }).child({ component: 'connector', thread: 'pages' });
const api = createApiClient({ ...data.api, logger });
const encoders = {
  AlertUpserted: avroEncoder(
    data.schemas.AlertUpserted.schemaId,
    data.schemas.AlertUpserted.subject,
    loadSchema(SchemaNames.AlertUpserted),
  ),
  AlertDeactivated: avroEncoder(
    data.schemas.AlertDeactivated.schemaId,
    data.schemas.AlertDeactivated.subject,
    loadSchema(SchemaNames.AlertDeactivated),
  ),
};
const source = readAhead(
  localPageSource({
    feed: api,
    encoders,
    ...(data.eventMaxBytes !== undefined && { limits: { eventMaxBytes: data.eventMaxBytes } }),
    onRetry: (retry) => post({ type: 'retry', ...retry }),
  }),
  data.readAhead,
);
const requests = new Map<number, AbortController>();

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'next': {
      const controller = new AbortController();
      requests.set(message.id, controller);
      source
        .next(message.request, controller.signal)
        .then(
          (page) => post({ type: 'page', id: message.id, page }, transferablesOf(page)),
          (err: unknown) => post({ type: 'error', id: message.id, error: serializeError(err) }),
        )
        .finally(() => requests.delete(message.id));
      break;
    }
    case 'abort':
      requests.get(message.id)?.abort(new AbortedError('export request aborted'));
      requests.delete(message.id);
      break;
    case 'close':
      void source
        .close()
        .then(() => api.close())
        // With the port closed and the API client's connections gone, the thread ends.
        .finally(() => port.close());
      break;
  }
});
