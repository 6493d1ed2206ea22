import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  type Batch,
  createConnector,
  type ExportFeed,
  type PublishSession,
} from '../../src/connector/connector.ts';
import {
  type CursorRecord,
  type ExportRequest,
  MAX_REJECTED_AFTER_MARK,
} from '../../src/connector/cursor.ts';
import { createConnectorMetrics } from '../../src/connector/metrics.ts';
import { localPageSource } from '../../src/connector/pages.ts';
import {
  ConfigError,
  FencedError,
  InvalidInputError,
  KafkaError,
  UpstreamClientError,
  UpstreamUnauthorizedError,
} from '../../src/errors.ts';
import { createLogger, type Logger, silentLogger } from '../../src/logger.ts';
import { logCapture } from '../helpers/log.ts';
import { testEncoders } from './encoders.ts';

const IBANS = ['DE89370400440532013000', 'FR1420041010050500013M02606', 'GB82WEST12345698765432'];

interface Row {
  id: string;
  iban: string;
  bic: null;
  qualification: string;
  reportsCount: number;
  updatedAt: string;
  isActive: boolean;
}

/** A pure in-memory feed with the contract's rules: ordered rows, index cursor, exclusive updatedAfter. */
class FakeFeed implements ExportFeed {
  rows: Row[] = [];
  requests: ExportRequest[] = [];
  onRequest: (n: number) => void = () => {};
  readonly pageSize: number;
  constructor(pageSize: number) {
    this.pageSize = pageSize;
  }
  add(id: string, at: number, isActive = true): void {
    this.rows.push({
      id,
      iban: IBANS[Number(id.replace(/\D/g, '')) % IBANS.length] ?? '',
      bic: null,
      qualification: 'PENDING',
      reportsCount: 1,
      updatedAt: new Date(at).toISOString(),
      isActive,
    });
  }
  async exportPage(request: ExportRequest) {
    this.requests.push(request);
    this.onRequest(this.requests.length);
    let start = 0;
    if (request.cursor !== undefined) start = Number(request.cursor);
    else if (request.updatedAfter !== undefined) {
      const after = Date.parse(request.updatedAfter);
      start = this.rows.findIndex((r) => Date.parse(r.updatedAt) > after);
      if (start < 0) start = this.rows.length;
    }
    const end = Math.min(start + this.pageSize, this.rows.length);
    return { rows: this.rows.slice(start, end), nextCursor: end < this.rows.length ? String(end) : null };
  }
}

/** A feed that answers 400 to the cursors in `refused` (or to every cursor), as to expired ones. */
class RefusingFeed extends FakeFeed {
  refused = new Set<string>();
  refuseAll = false;
  override async exportPage(request: ExportRequest) {
    if (request.cursor !== undefined && (this.refuseAll || this.refused.has(request.cursor))) {
      this.requests.push(request);
      this.refused.delete(request.cursor);
      throw new UpstreamClientError('GET /sharing/v1/alerts/export answered 400: INVALID_CURSOR', {
        status: 400,
      });
    }
    return super.exportPage(request);
  }
}

/**
 * A feed whose cursor parameter goes by another name than the one sent: every request is answered
 * as one without a cursor, with the first page. `freshCursors` names a new cursor each time.
 */
class CursorIgnoringFeed extends FakeFeed {
  freshCursors = false;
  override async exportPage(request: ExportRequest) {
    const page = await super.exportPage({ ...request, cursor: undefined });
    if (this.freshCursors && page.nextCursor !== null) page.nextCursor += `.${this.requests.length}`;
    return page;
  }
}

/** A session store standing in for Kafka: commits are all-or-nothing, the cursor survives sessions. */
class FakeKafka {
  committed: Batch[] = [];
  cursor: CursorRecord | null = null;
  sessions = 0;
  failNextCommit = false;
  async open(): Promise<PublishSession> {
    this.sessions++;
    return {
      cursor: this.cursor,
      commit: async (batch) => {
        if (this.failNextCommit) {
          this.failNextCommit = false;
          throw new KafkaError('broker went away', { retriable: true });
        }
        this.committed.push(batch);
        this.cursor = batch.cursor;
      },
      close: async () => {},
    };
  }
  eventIds(): string[] {
    return this.committed.flatMap((b) => b.events.map((e) => e.alertId));
  }
}

function connectorFor(
  feed: ExportFeed,
  kafka: FakeKafka,
  overrides: {
    txMaxRows?: number;
    txMaxMs?: number;
    openSession?: () => Promise<PublishSession>;
    logger?: Logger;
    now?: () => number;
    pollIntervalMs?: number;
  } = {},
) {
  return createConnector({
    name: 'test',
    exportStart: 'earliest',
    cursorParam: 'cursor',
    pollIntervalMs: overrides.pollIntervalMs ?? 1,
    txMaxRows: overrides.txMaxRows ?? 3,
    txMaxMs: overrides.txMaxMs ?? 60_000,
    pages: localPageSource({ feed, encoders: testEncoders(), onRetry: () => {} }),
    openSession: overrides.openSession ?? (() => kafka.open()),
    metrics: createConnectorMetrics(new Registry()),
    logger: overrides.logger ?? silentLogger(),
    ...(overrides.now && { now: overrides.now }),
  });
}

/** Sessions of `kafka` for connectorFor, and `firstCommit`, resolved once the first of their commits is done. */
function watchingCommits(kafka: FakeKafka) {
  const firstCommit = Promise.withResolvers<void>();
  const openSession = async (): Promise<PublishSession> => {
    const session = await kafka.open();
    return {
      ...session,
      commit: async (batch) => {
        await session.commit(batch);
        firstCommit.resolve();
      },
    };
  };
  return { openSession, firstCommit: firstCommit.promise };
}

describe('connector loop', () => {
  it('publishes every row once, resumes just below the mark when caught up, and never re-reads from the start', async () => {
    const feed = new FakeFeed(2);
    for (let i = 0; i < 5; i++) feed.add(`a${i}`, 1000 + i);
    feed.add('a5', 1004); // shares the last millisecond
    const kafka = new FakeKafka();
    const connector = connectorFor(feed, kafka);
    feed.onRequest = (n) => {
      if (n === 6) feed.add('a6', 1004); // arrives at the mark after the feed was caught up
      if (n === 8) void connector.stop();
    };
    await connector.start();
    expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    expect(feed.requests.filter((r) => r.cursor === undefined && r.updatedAfter === undefined)).toHaveLength(
      1,
    );
    expect(feed.requests.at(-1)).toEqual({ updatedAfter: new Date(1003).toISOString() });
  });

  it('reads on from the mark when the upstream refuses a cursor (expired), without a duplicate or a gap', async () => {
    const feed = new RefusingFeed(3);
    for (let i = 0; i < 9; i++) feed.add(`a${i}`, 1000 + i);
    feed.refused.add('6');
    const kafka = new FakeKafka();
    const log = logCapture();
    const connector = connectorFor(feed, kafka, {
      logger: createLogger({ level: 'warn', destination: log.stream }),
    });
    feed.onRequest = (n) => {
      if (n === 6) void connector.stop();
    };
    await connector.start();
    expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8']);
    // The refused cursor, then the resume below the mark that a6's page came from.
    expect(feed.requests.slice(2, 4)).toEqual([
      { cursor: '6' },
      { updatedAfter: new Date(1004).toISOString() },
    ]);
    expect(log.lines).toContainEqual(
      expect.objectContaining({ msg: expect.stringContaining('refused the export cursor') }),
    );
  });

  it('stops with the upstream error when cursors are refused again without the mark moving', async () => {
    const feed = new RefusingFeed(3);
    for (let i = 0; i < 3; i++) feed.add(`a${i}`, 1000);
    for (let i = 3; i < 9; i++) feed.add(`a${i}`, 1001); // one millisecond, more rows than a page
    feed.refuseAll = true;
    const kafka = new FakeKafka();
    const connector = connectorFor(feed, kafka);
    await expect(connector.start()).rejects.toBeInstanceOf(UpstreamClientError);
    expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2']);
  });

  // Regression: the first page was published again for ever (its rows below the mark taken for late
  // ones), and the connector never got past it.
  it.each([
    ['names the cursor sent as its nextCursor', false],
    ['names a fresh cursor each time', true],
  ])(
    'stops with a ConfigError naming EXPORT_CURSOR_PARAM, the first page committed once also across a restart, when the upstream ignores the cursor and %s',
    async (_, fresh) => {
      const feed = new CursorIgnoringFeed(3);
      feed.freshCursors = fresh;
      for (let i = 0; i < 9; i++) feed.add(`a${i}`, 1000 + i);
      const kafka = new FakeKafka();
      const connector = connectorFor(feed, kafka, { txMaxRows: 100 });
      feed.onRequest = (n) => {
        if (n === 20) void connector.stop(); // ends the endless loop of the defect
      };
      const failure = connector.start();
      await expect(failure).rejects.toBeInstanceOf(ConfigError);
      await expect(failure).rejects.toThrow(/EXPORT_CURSOR_PARAM: .*query parameter "cursor"/);
      expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2']);
      // The position after the first page, which a restart with the right name reads on from.
      expect(kafka.cursor).toMatchObject({ cursor: fresh ? '3.1' : '3', highWaterMark: 1002 });
      expect(feed.requests).toHaveLength(2);
      // Restarted on that cursor with the name still wrong: it stops again, publishing nothing more.
      const restarted = connectorFor(feed, kafka, { txMaxRows: 100 });
      feed.onRequest = (n) => {
        if (n === 40) void restarted.stop();
      };
      await expect(restarted.start()).rejects.toBeInstanceOf(ConfigError);
      expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2']);
    },
  );

  // Regression: after a restart on a stored cursor, the page answering it (the feed's first page, the
  // cursor ignored) had nothing to be compared with, and was committed whenever its transaction was
  // due before the next page came: its rows again at every restart, and a fresh cursor stored.
  it.each<[string, { txMaxRows: number; txMaxMs?: number; slowPages?: boolean }]>([
    ['its rows reach CONNECTOR_TX_MAX_ROWS', { txMaxRows: 2 }],
    ['the next page comes after CONNECTOR_TX_MAX_MS', { txMaxRows: 100, txMaxMs: 1000, slowPages: true }],
  ])(
    'commits nothing of the first page answering a stored cursor the upstream ignores, when %s',
    async (_, { txMaxRows, txMaxMs, slowPages }) => {
      const feed = new CursorIgnoringFeed(3);
      feed.freshCursors = true;
      for (let i = 0; i < 9; i++) feed.add(`a${i}`, 1000 + i);
      let clock = 0;
      // Each page takes 1.5 s on this clock.
      if (slowPages) {
        feed.onRequest = () => {
          clock += 1500;
        };
      }
      const kafka = new FakeKafka();
      const options = { txMaxRows, ...(txMaxMs !== undefined && { txMaxMs }), now: () => clock };
      await expect(connectorFor(feed, kafka, options).start()).rejects.toBeInstanceOf(ConfigError);
      expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2']);
      const stored = kafka.cursor?.cursor;
      for (let restart = 0; restart < 3; restart++) {
        await expect(connectorFor(feed, kafka, options).start()).rejects.toBeInstanceOf(ConfigError);
      }
      expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2']);
      expect(kafka.cursor?.cursor).toBe(stored);
    },
  );

  // Regression: only a null nextCursor was caught up; such a page was asked for again at once, for ever.
  it('waits its poll interval after an empty page that hands back the cursor it answered, committing what it read', async () => {
    const feed = new FakeFeed(3);
    feed.add('a0', 1000);
    feed.add('a1', 1001);
    const caughtUpWithCursor: ExportFeed = {
      async exportPage(request) {
        // Answers after the timers' turn, as a network call does: a connector asking again at once,
        // for ever, then still lets the test time out rather than starve the event loop.
        await new Promise((resolve) => setImmediate(resolve));
        const page = await feed.exportPage(request);
        return page.nextCursor === null ? { ...page, nextCursor: request.cursor ?? '2' } : page;
      },
    };
    const kafka = new FakeKafka();
    const { openSession, firstCommit } = watchingCommits(kafka);
    const connector = connectorFor(caughtUpWithCursor, kafka, {
      txMaxRows: 100,
      pollIntervalMs: 3_600_000,
      openSession,
    });
    const running = connector.start();
    await firstCommit;
    await connector.stop();
    await running;
    expect(kafka.eventIds()).toEqual(['a0', 'a1']);
    expect(kafka.cursor?.cursor).toBe('2');
    expect(feed.requests).toEqual([{}, { cursor: '2' }]);
  });

  it('restarts from the committed cursor after a failed commit, without a duplicate or a gap', async () => {
    const feed = new FakeFeed(2);
    for (let i = 0; i < 8; i++) feed.add(`a${i}`, 1000 + i);
    const kafka = new FakeKafka();
    const connector = connectorFor(feed, kafka, { txMaxRows: 2 });
    feed.onRequest = (n) => {
      if (n === 3) kafka.failNextCommit = true;
      if (n === 12) void connector.stop();
    };
    await connector.start();
    expect(kafka.sessions).toBe(2);
    expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']);
  });

  it('starts the reconnect backoff again from the shortest wait once a session has committed', async () => {
    const feed = new FakeFeed(2);
    for (let i = 0; i < 4; i++) feed.add(`a${i}`, 1000 + i);
    const kafka = new FakeKafka();
    const log = logCapture();
    let outages = 2;
    const connector = connectorFor(feed, kafka, {
      txMaxRows: 2,
      // Two failed sessions first, then one that commits a page before its next commit fails.
      openSession: () =>
        outages-- > 0 ? Promise.reject(new KafkaError('broker down', { retriable: true })) : kafka.open(),
      logger: createLogger({ level: 'warn', destination: log.stream }),
    });
    feed.onRequest = (n) => {
      if (n === 2) kafka.failNextCommit = true;
      if (n === 4) void connector.stop();
    };
    await connector.start();
    expect(log.lines.filter((l) => 'attempt' in l).map((l) => l.attempt)).toEqual([1, 2, 1]);
    expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2', 'a3']);
  });

  it('commits the rows read so far once their transaction is CONNECTOR_TX_MAX_MS old, while the next page is still awaited', async () => {
    const feed = new FakeFeed(2);
    for (let i = 0; i < 4; i++) feed.add(`a${i}`, 1000 + i);
    // The second page is held back, as a 429's Retry-After or a slow upstream would.
    const held = Promise.withResolvers<void>();
    const serve = feed.exportPage.bind(feed);
    feed.exportPage = async (request) => {
      if (request.cursor === '2') await held.promise;
      return serve(request);
    };
    const kafka = new FakeKafka();
    const { openSession, firstCommit } = watchingCommits(kafka);
    const connector = connectorFor(feed, kafka, { txMaxRows: 100, txMaxMs: 50, openSession });
    feed.onRequest = (n) => {
      if (n === 4) void connector.stop();
    };
    const running = connector.start();
    await firstCommit;
    expect(kafka.eventIds()).toEqual(['a0', 'a1']);
    expect(kafka.committed[0]?.cursor.cursor).toBe('2'); // resumes with the page still awaited
    held.resolve();
    await running;
    expect(kafka.eventIds()).toEqual(['a0', 'a1', 'a2', 'a3']);
  });

  // Regression: the reactivation was taken for the first version served again, and the alert's last
  // event was AlertDeactivated while the upstream had it active.
  it('publishes an alert going active, inactive and active again within one updatedAt, read between the changes', async () => {
    const feed = new FakeFeed(10);
    feed.add('a1', 1000);
    const kafka = new FakeKafka();
    const connector = connectorFor(feed, kafka);
    /** The feed shows the alert's current state: the row changes in place, its updatedAt kept. */
    const set = (isActive: boolean) => {
      feed.rows[0] = { ...(feed.rows[0] as Row), isActive };
    };
    feed.onRequest = (n) => {
      if (n === 2) set(false);
      if (n === 3) set(true);
      if (n === 6) void connector.stop();
    };
    await connector.start();
    const events = kafka.committed.flatMap((b) => b.events.map((e) => `${e.alertId}:${e.type}`));
    expect(events).toEqual(['a1:AlertUpserted', 'a1:AlertDeactivated', 'a1:AlertUpserted']);
  });

  it('sends a bad row to the DLQ once even when the feed serves it again at the mark', async () => {
    const feed = new FakeFeed(10);
    feed.add('a1', 1000);
    feed.rows.push({ ...(feed.rows[0] as Row), id: 'bad', isActive: 'yes' as unknown as boolean });
    const kafka = new FakeKafka();
    const connector = connectorFor(feed, kafka);
    feed.onRequest = (n) => {
      if (n === 4) void connector.stop();
    };
    await connector.start();
    const rejected = kafka.committed.flatMap((b) => b.rejected);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatchObject({ code: 'ROW_IS_ACTIVE_INVALID', id: 'bad' });
    expect(JSON.parse(rejected[0]?.raw ?? '')).toMatchObject({ id: 'bad', isActive: 'yes' });
    expect(kafka.eventIds()).toEqual(['a1']);
  });

  it('stops, with every committed bad row in the DLQ once and none past the bound, when the feed switches to an updatedAt it cannot read', async () => {
    const feed = new FakeFeed(1000);
    feed.add('a1', 1000);
    for (let i = 0; i <= MAX_REJECTED_AFTER_MARK; i++) {
      feed.rows.push({ ...(feed.rows[0] as Row), id: `z${i}`, updatedAt: '2025-01-02 10:00:00' });
    }
    const kafka = new FakeKafka();
    const connector = connectorFor(feed, kafka, { txMaxRows: 1000 });
    await expect(connector.start()).rejects.toBeInstanceOf(InvalidInputError);
    const rejected = kafka.committed.flatMap((b) => b.rejected.map((r) => r.id));
    expect(new Set(rejected).size).toBe(rejected.length);
    expect(rejected.length).toBeLessThanOrEqual(MAX_REJECTED_AFTER_MARK);
    expect(rejected).toEqual(feed.rows.slice(1, rejected.length + 1).map((r) => r.id));
    expect(kafka.cursor?.rejectedAfterMark).toHaveLength(rejected.length);
    expect(kafka.eventIds()).toEqual(['a1']);
  });

  it('commits its unchanged cursor once an hour while the feed is idle, before the broker can expire its transactional id', async () => {
    const feed = new FakeFeed(10);
    feed.add('a1', 1000);
    const kafka = new FakeKafka();
    let clock = 0;
    const connector = connectorFor(feed, kafka, { now: () => clock });
    feed.onRequest = (n) => {
      if (n === 3) clock += 60 * 60 * 1000;
      if (n === 5) void connector.stop();
    };
    await connector.start();
    expect(kafka.committed.map((b) => b.events.length)).toEqual([1, 0]);
    expect(kafka.committed[1]?.cursor).toMatchObject({ cursor: null, highWaterMark: 1000 });
  });

  describe('fenced while stopping (another instance took over)', () => {
    /** A Kafka whose commits wait for `beforeFailing`, then fail as a fenced producer's do. */
    function fencedAfter(beforeFailing: () => Promise<void>): FakeKafka {
      const kafka = new FakeKafka();
      const open = kafka.open.bind(kafka);
      kafka.open = async () => ({
        ...(await open()),
        commit: async () => {
          await beforeFailing();
          throw new FencedError('transactional id fraudlink-test was taken over (PRODUCER_FENCED)');
        },
      });
      return kafka;
    }

    it('ends with the FencedError when the commit it waits for when caught up is fenced', async () => {
      const feed = new FakeFeed(10);
      feed.add('a1', 1000);
      // Caught up after one page, it waits for that page's commit; the stop comes meanwhile.
      const connector = connectorFor(
        feed,
        fencedAfter(async () => {
          void connector.stop();
        }),
      );
      await expect(connector.start()).rejects.toBeInstanceOf(FencedError);
    });

    it('ends with the FencedError when the commit still running as the next page is awaited is fenced', async () => {
      const feed = new FakeFeed(1);
      feed.add('a1', 1000);
      feed.add('a2', 1001);
      const stopped = Promise.withResolvers<void>();
      const connector = connectorFor(
        feed,
        fencedAfter(() => stopped.promise),
        { txMaxRows: 1 },
      );
      // The second page is asked for while the first one's commit runs; the stop comes meanwhile.
      feed.onRequest = (n) => {
        if (n !== 2) return;
        void connector.stop();
        stopped.resolve();
      };
      await expect(connector.start()).rejects.toBeInstanceOf(FencedError);
    });
  });

  it('stops with the upstream error when the credentials are refused', async () => {
    const kafka = new FakeKafka();
    const feed: ExportFeed = {
      exportPage: async () => {
        throw new UpstreamUnauthorizedError('401 unknown key', { status: 401 });
      },
    };
    await expect(connectorFor(feed, kafka).start()).rejects.toBeInstanceOf(UpstreamUnauthorizedError);
    expect(kafka.committed).toHaveLength(0);
  });
});
