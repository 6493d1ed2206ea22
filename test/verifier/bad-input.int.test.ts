import { createServer } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { IncomingRecord, OutgoingRecord } from '../../src/kafka/index.ts';
import { expectCleanStop } from '../helpers/cli.ts';
import { collect, testProducer } from '../helpers/kafka.ts';
import { header, verifierHarness } from './harness.ts';

const IBAN = 'DE89370400440532013000';
const ready = (l: Record<string, unknown>) => l.msg === 'verifier started';

/** A port free now, for the verifier's ops server, so that the test can read its /metrics. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A JSON request on partition 0 (every case here shares it), due in two minutes. */
function request(
  topic: string,
  id: string,
  {
    key = id,
    body = {},
    headers = {},
  }: { key?: string; body?: object; headers?: Record<string, string> } = {},
): OutgoingRecord {
  const now = Date.now();
  return {
    topic,
    partition: 0,
    key,
    value: Buffer.from(
      JSON.stringify({ requestId: id, iban: IBAN, partyName: 'Anna Schmidt', requestedAt: now, ...body }),
    ),
    headers: { 'content-type': 'application/json', 'vop-deadline': String(now + 120_000), ...headers },
  };
}

const json = (r: IncomingRecord | undefined) => JSON.parse(r?.value?.toString() ?? 'null');
const keyOf = (r: IncomingRecord) => r.key?.toString();

/**
 * A started verifier whose operator allow-list is broad and unanchored (it would admit the alerts
 * topic, an internal topic and names that only contain the reply prefix, were it a substring match),
 * with the connector's alerts topic named, and readers of its default reply topic and DLQ.
 */
async function verifierWithBroadAllowList() {
  const h = await verifierHarness();
  const alertsTopic = `${h.prefix}.alerts.v1`;
  // A requester's topic whose name only contains the allowed prefix.
  const containing = `x.${h.prefix}.replies.y`;
  await h.admin.provisionTopics(
    [alertsTopic, containing].map((topic) => ({ topic, partitions: 1, replicationFactor: 1, configs: {} })),
  );
  onTestFinished(() => h.admin.deleteTopics([alertsTopic, containing]).catch(() => {}));
  const producer = await testProducer(h.kafka);
  const replies = await collect(h.kafka, h.config.verifier.repliesTopic);
  const dlq = await collect(h.kafka, h.config.verifier.dlqTopic);
  const alerts = await collect(h.kafka, alertsTopic, 'read_uncommitted');
  const port = await freePort();
  const verifier = h.start('one', {
    VERIFY_REPLY_TOPICS: `${h.prefix.replace(/[.-]/g, '\\$&')}\\.(replies|alerts)\\.|offsets`,
    ALERTS_TOPIC: alertsTopic,
    HTTP_PORT: String(port),
  });
  await verifier.logLine(ready);
  /**
   * Sends `poison`, then two ordinary requests on the same partition; resolves once both are
   * answered on the default topic, with the poison's reply if it has one.
   */
  let round = 0;
  const behind = async (poison: OutgoingRecord) => {
    round++;
    const ordinary = [`ok-${round}-a`, `ok-${round}-b`];
    await producer.send([poison, ...ordinary.map((id) => request(h.config.verifier.requestsTopic, id))]);
    const seen = await replies.until((r) => ordinary.every((id) => r.some((x) => keyOf(x) === id)));
    for (const id of ordinary) {
      expect(json(seen.find((x) => keyOf(x) === id)), id).toMatchObject({ outcome: 'COMPLETED' });
    }
    return seen.find((x) => keyOf(x) === poison.key?.toString());
  };
  const metric = async (name: string) => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);
  };
  return { h, verifier, replies, dlq, alerts, alertsTopic, containing, behind, metric };
}

describe('verifier: one bad request never stops it, on a real broker', () => {
  it('replies on the default topic to a kafka_replyTopic that is illegal, matched only in part, internal or its own, and answers the requests behind it', async () => {
    const { h, verifier, alerts, alertsTopic, containing, behind, metric } =
      await verifierWithBroadAllowList();
    const requests = h.config.verifier.requestsTopic;
    const cases: [string, string][] = [
      [`${h.prefix}.replies.x y`, 'not a legal Kafka topic name'],
      [`${h.prefix}.replies.${'x'.repeat(300)}`, 'not a legal Kafka topic name'],
      [`${h.prefix}.replies.custom\n`, 'not a legal Kafka topic name'],
      [containing, 'not matched in full by VERIFY_REPLY_TOPICS'],
      ['__consumer_offsets', 'an internal topic'],
      [alertsTopic, "one of fraudlink's own topics"],
      [requests, "one of fraudlink's own topics"],
    ];
    for (const [i, [replyTopic, why]] of cases.entries()) {
      const id = `poison-topic-${i}`;
      const warned = verifier.logLine((l) => l.requestId === id && l.reason === why);
      const reply = await behind(
        request(requests, id, { headers: { kafka_replyTopic: replyTopic, kafka_correlationId: `c-${i}` } }),
      );
      expect(json(reply), why).toMatchObject({ requestId: id, outcome: 'COMPLETED' });
      expect(header(reply as IncomingRecord, 'kafka_correlationId')).toBe(`c-${i}`);
      await warned;
    }
    expect(await metric('fraudlink_verifier_reply_topic_refused_total')).toBe(cases.length);
    expect(alerts.records).toEqual([]);
    expect(verifier.child.exitCode).toBeNull();
    await expectCleanStop(verifier);
  });

  it('refuses an over-long key, correlation id, name or IBAN before any work, and answers the requests behind each', async () => {
    const { h, verifier, dlq, behind } = await verifierWithBroadAllowList();
    const requests = h.config.verifier.requestsTopic;
    const invalid = async (poison: OutgoingRecord, code: string) => {
      const reply = await behind(poison);
      expect(json(reply), code).toMatchObject({ outcome: 'INVALID_REQUEST', error: { code } });
      // Only bounded strings in the reply: never the input that passed a limit.
      expect(reply?.value?.length, code).toBeLessThan(1024);
      return reply as IncomingRecord;
    };

    const longKey = 'k'.repeat(400_000);
    await behind(request(requests, 'poison-key', { key: longKey }));
    const [dead] = await dlq.until((r) => r.length >= 1);
    expect(dead?.key?.length).toBe(longKey.length);
    expect(header(dead as IncomingRecord, 'error-code')).toBe('REQUEST_KEY_TOO_LONG');

    const correlated = await invalid(
      request(requests, 'poison-correlation', { headers: { kafka_correlationId: 'c'.repeat(400_000) } }),
      'REQUEST_CORRELATION_ID_TOO_LONG',
    );
    expect(header(correlated, 'kafka_correlationId')).toBe('poison-correlation');
    await invalid(
      request(requests, 'poison-name', { body: { partyName: 'x'.repeat(1_000_000) } }),
      'REQUEST_NAME_TOO_LONG',
    );
    await invalid(
      request(requests, 'poison-iban', { body: { iban: `DE89${'3'.repeat(96)}` } }),
      'REQUEST_IBAN_TOO_LONG',
    );
    // No log line carries the inputs whole.
    expect(verifier.stderr()).not.toMatch(/k{200}|c{200}|x{200}|3{96}/);
    expect(verifier.child.exitCode).toBeNull();
    await expectCleanStop(verifier);
  });

  it('moves the replies meant for a reply topic deleted after its first reply to the default topic, and answers the requests behind them', async () => {
    const h = await verifierHarness();
    const producer = await testProducer(h.kafka);
    const replies = await collect(h.kafka, h.config.verifier.repliesTopic);
    const custom = await collect(h.kafka, h.customReplyTopic);
    const verifier = await h.started();
    const requests = h.config.verifier.requestsTopic;
    const toCustom = (id: string) =>
      request(requests, id, { headers: { kafka_replyTopic: h.customReplyTopic } });
    await producer.send([toCustom('before-delete')]);
    await custom.until((r) => r.some((x) => keyOf(x) === 'before-delete'));
    // The verifier knows the topic's partitions (cached): the broker refuses the next reply to it.
    await h.admin.deleteTopics([h.customReplyTopic]);
    const moved = verifier.logLine(
      (l) => Array.isArray(l.refused) || l.refused === h.customReplyTopic,
      120_000,
    );
    await producer.send([
      toCustom('after-delete'),
      request(requests, 'behind-1'),
      request(requests, 'behind-2'),
    ]);
    const seen = await replies.until(
      (r) => ['after-delete', 'behind-1', 'behind-2'].every((id) => r.some((x) => keyOf(x) === id)),
      120_000,
    );
    expect(json(seen.find((x) => keyOf(x) === 'after-delete'))).toMatchObject({ outcome: 'COMPLETED' });
    await moved;
    expect(verifier.child.exitCode).toBeNull();
    await expectCleanStop(verifier);
  }, 180_000);
});
