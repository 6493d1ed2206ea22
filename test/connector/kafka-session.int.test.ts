import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConnectorConfig } from '../../src/config/index.ts';
import type { Batch } from '../../src/connector/connector.ts';
import { CursorTracker } from '../../src/connector/cursor.ts';
import { cursorRecordOf, openKafkaSession, transactionalIdOf } from '../../src/connector/kafka-session.ts';
import { AbortedError } from '../../src/errors.ts';
import { createLogger, silentLogger } from '../../src/logger.ts';
import { runCli } from '../helpers/cli.ts';
import { logCapture } from '../helpers/log.ts';
import { connectorHarness } from './harness.ts';

/** A batch that carries only a cursor record, with `cursor` as the upstream cursor. */
function cursorOnly(name: string, cursor: string): Batch {
  const tracker = CursorTracker.initial(name, 'earliest');
  tracker.pageDone(cursor);
  return { events: [], rejected: [], cursor: tracker.snapshot() };
}

/** Resolves once `log` holds a line with the message `msg`. */
async function logged(log: ReturnType<typeof logCapture>, msg: string): Promise<void> {
  while (!log.lines.some((l) => l.msg === msg)) await log.next();
}

const WAITING = 'cursor read waits for transactions still open';

describe('the connector publish session against a real broker', () => {
  it('resumes from its latest cursor while another connector left a transaction open on the shared offsets topic', async () => {
    const h = await connectorHarness({ alerts: 1 });
    const config = loadConnectorConfig(h.env);
    const { offsetsTopic } = config.topics;
    const name = config.connector.name;
    const first = await openKafkaSession({ kafka: h.kafka, config, logger: silentLogger() });
    await first.commit(cursorOnly(name, 'c1'));
    // Another CONNECTOR_NAME on the same offsets topic, killed mid-transaction: it stays open.
    const other = await h.kafka.transactionalProducer({ transactionalId: transactionalIdOf(`${name}-b`) });
    onTestFinished(() => other.close());
    const open = await other.begin();
    await open.send([cursorRecordOf(offsetsTopic, `${name}-b`, cursorOnly(`${name}-b`, 'b1').cursor)]);
    await first.commit(cursorOnly(name, 'c2'));
    await first.close();

    const log = logCapture();
    const logger = createLogger({ destination: log.stream });
    const opening = openKafkaSession({ kafka: h.kafka, config, logger });
    const waiting = logged(log, WAITING).then(() => 'waiting');
    expect(await Promise.race([waiting, opening.then(() => 'opened')])).toBe('waiting');
    await open.abort();
    const restarted = await opening;
    onTestFinished(() => restarted.close());
    expect(restarted.cursor?.cursor).toBe('c2');
  });

  it('resets a cursor whose stored record is malformed, counters from zero, warning about the record it replaced', async () => {
    const h = await connectorHarness({ alerts: 1 });
    const config = loadConnectorConfig(h.env);
    const { offsetsTopic } = config.topics;
    const name = config.connector.name;
    const producer = await h.kafka.producer();
    onTestFinished(() => producer.close());
    await producer.send([{ topic: offsetsTopic, key: name, value: Buffer.from('{"version":1,"cursor":') }]);

    const reset = runCli(['connector', 'reset', '--updated-after', '2026-01-01T00:00:00Z'], h.env);
    expect(await reset.exited).toBe(0);
    expect(reset.stderr()).toMatch(
      /"level":"warn".*cursor record is not JSON.*"msg":"the stored cursor record/,
    );
    const session = await openKafkaSession({ kafka: h.kafka, config, logger: silentLogger() });
    onTestFinished(() => session.close());
    expect(session.cursor).toMatchObject({
      cursor: null,
      highWaterMark: null,
      exportStart: '2026-01-01T00:00:00.000Z',
      counters: { published: 0, rejected: 0, deduplicated: 0, pages: 0 },
    });
  });

  it('stops opening when its signal aborts while the cursor read waits out an open transaction (SIGTERM)', async () => {
    const h = await connectorHarness({ alerts: 1 });
    const config = loadConnectorConfig(h.env);
    const name = `${config.connector.name}-b`;
    const other = await h.kafka.transactionalProducer({ transactionalId: transactionalIdOf(name) });
    onTestFinished(() => other.close());
    const open = await other.begin();
    onTestFinished(() => open.abort());
    await open.send([cursorRecordOf(config.topics.offsetsTopic, name, cursorOnly(name, 'b1').cursor)]);

    const log = logCapture();
    const controller = new AbortController();
    const logger = createLogger({ destination: log.stream });
    const opening = openKafkaSession({ kafka: h.kafka, config, logger, signal: controller.signal });
    await logged(log, WAITING);
    controller.abort();
    await expect(opening).rejects.toBeInstanceOf(AbortedError);
  });
});
