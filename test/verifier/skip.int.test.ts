import { describe, expect, it } from 'vitest';
import type { IncomingRecord, KafkaClient } from '../../src/kafka/index.ts';
import { runCli } from '../helpers/cli.ts';
import { testClients, testTopics } from '../helpers/kafka.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';
import { writeBomb } from '../kafka/unreadable-batches.fixtures.ts';

/**
 * A requests topic holding three JSON requests on partition 1, its DLQ, and a group stopped at
 * `committed` (undefined: a group that never committed, which starts at the earliest offset).
 */
async function stuckGroup(
  kafka: KafkaClient,
  committed: string | undefined,
  { dlqMaxBytes, padding = '' }: { dlqMaxBytes?: number; padding?: string } = {},
) {
  const [requests] = (await testTopics(kafka, ['skip.requests'], 2)) as [string];
  const dlqConfigs: Record<string, string> =
    dlqMaxBytes === undefined ? {} : { 'max.message.bytes': String(dlqMaxBytes) };
  const [dlq] = (await testTopics(kafka, ['skip.dlq'], 1, dlqConfigs)) as [string];
  const groupId = uniqueName('skip.group');
  const producer = await kafka.producer();
  await producer.send(
    [0, 1, 2].map((n) => ({
      topic: requests,
      partition: 1,
      key: `r-${n}`,
      value: Buffer.from(`{"requestId":"r-${n}"${padding}}`),
      headers: { 'content-type': 'application/json', kafka_correlationId: `c-${n}` },
    })),
  );
  await producer.close();
  if (committed !== undefined) {
    const setter = await kafka.transactionalProducer({ transactionalId: uniqueName('skip.setup') });
    await setter.transaction([], {
      consumerOffsets: { groupId, offsets: [{ topic: requests, partition: 1, offset: committed }] },
    });
    await setter.close();
  }
  const env = {
    ...stackEnv(),
    VERIFY_REQUESTS_TOPIC: requests,
    VERIFY_DLQ_TOPIC: dlq,
    VERIFY_GROUP_ID: groupId,
    LOG_LEVEL: 'info',
  };
  const skip = (offset: string, ...more: string[]) =>
    runCli(['verifier', 'skip', '--partition', '1', '--offset', offset, ...more], env);
  const committedOffset = async (): Promise<string | undefined> => {
    const admin = await kafka.admin();
    try {
      return (await admin.groupOffsets(groupId, requests)).find((o) => o.partition === 1)?.offset;
    } finally {
      await admin.close();
    }
  };
  const dlqRecords = async (): Promise<IncomingRecord[]> => {
    const records: IncomingRecord[] = [];
    await kafka.readTopic(dlq, (read) => void records.push(...read));
    return records;
  };
  return { requests, dlq, groupId, env, skip, committedOffset, dlqRecords };
}

describe('fraudlink verifier skip against a real broker', () => {
  it("moves the group's next record to the DLQ with its key, value and headers and commits past it; run again, it does nothing", async () => {
    const { kafka } = testClients();
    const g = await stuckGroup(kafka, '1');
    const run = g.skip('1', '--reason', 'poison request, ticket 42');
    expect(await run.exited).toBe(0);
    expect(JSON.parse(run.stdout())).toMatchObject({ kind: 'skipped', committed: '2', readable: true });
    expect(await g.committedOffset()).toBe('2');
    const [copy, ...more] = await g.dlqRecords();
    expect(more).toEqual([]);
    expect(copy?.key?.toString()).toBe('r-1');
    expect(copy?.value?.toString()).toBe('{"requestId":"r-1"}');
    const headers = Object.fromEntries(
      Object.entries(copy?.headers ?? {}).map(([k, v]) => [k, v?.toString()]),
    );
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      kafka_correlationId: 'c-1',
      'error-code': 'OPERATOR_SKIPPED',
      'error-message': 'poison request, ticket 42',
      'source-topic': g.requests,
      'source-partition': '1',
      'source-offset': '1',
    });
    expect(Number.isNaN(Date.parse(headers['observed-at'] ?? ''))).toBe(false);

    const again = g.skip('1');
    expect(await again.exited).toBe(0);
    expect(JSON.parse(again.stdout())).toMatchObject({ kind: 'already-past', committed: '2' });
    expect(await g.dlqRecords()).toHaveLength(1);
    expect(await g.committedOffset()).toBe('2');
  });

  it('refuses with exit 2 while the group has a live member, and commits nothing, unless it is past the record already', async () => {
    const { kafka } = testClients();
    const g = await stuckGroup(kafka, '1');
    const member = kafka.groupConsumer({
      groupId: g.groupId,
      topics: [g.requests],
      // Commits nothing (offsets are the caller's to commit): the committed offset stays at 1.
      eachBatch: async () => {},
    });
    await member.start();
    try {
      const run = g.skip('1');
      expect(await run.exited).toBe(2);
      expect(run.stderr()).toMatch(/USAGE: consumer group .* has 1 active member\(s\).*stop every verifier/);
      // A record the group is past already needs nothing, whoever is in the group.
      const past = g.skip('0');
      expect(await past.exited).toBe(0);
      expect(JSON.parse(past.stdout())).toMatchObject({ kind: 'already-past', committed: '1' });
    } finally {
      await member.close();
    }
    expect(await g.committedOffset()).toBe('1');
    expect(await g.dlqRecords()).toEqual([]);
  });

  it("refuses with exit 2 an offset past the group's next record, which would be skipped unanswered", async () => {
    const { kafka } = testClients();
    const g = await stuckGroup(kafka, '1');
    const run = g.skip('2');
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toMatch(/next record .* is a record at offset 1, before 2/);
    expect(await g.committedOffset()).toBe('1');
    expect(await g.dlqRecords()).toEqual([]);
  });

  it('takes the first record of the partition as the next one of a group that never committed', async () => {
    const { kafka } = testClients();
    const g = await stuckGroup(kafka, undefined);
    const run = g.skip('0');
    expect(await run.exited).toBe(0);
    expect(JSON.parse(run.stdout())).toMatchObject({ kind: 'skipped', committed: '1' });
    expect(await g.committedOffset()).toBe('1');
    expect((await g.dlqRecords()).map((r) => r.key?.toString())).toEqual(['r-0']);
  });

  it('cuts a copy larger than the DLQ topic takes down to fit, with dlq-truncated giving its original size', async () => {
    const { kafka } = testClients();
    const g = await stuckGroup(kafka, '1', { dlqMaxBytes: 2_000, padding: `,"pad":"${'x'.repeat(10_000)}"` });
    const run = g.skip('1');
    expect(await run.exited).toBe(0);
    const outcome = JSON.parse(run.stdout());
    expect(outcome).toMatchObject({ kind: 'skipped', committed: '2', readable: true });
    expect(outcome.truncatedFrom).toBeGreaterThan(10_000);
    const [copy] = await g.dlqRecords();
    expect(copy?.headers['dlq-truncated']?.toString()).toBe(String(outcome.truncatedFrom));
    expect(copy?.headers['error-code']?.toString()).toBe('OPERATOR_SKIPPED');
    expect(copy?.value?.toString()).toMatch(/^\{"requestId":"r-1","pad":"x+$/);
    expect(copy?.value?.length).toBeLessThan(2_000);
  });

  it('moves past a whole record batch that cannot be read, its compressed records in the DLQ', async () => {
    const { kafka } = testClients();
    const g = await stuckGroup(kafka, '3');
    // 80 MiB of zeros in one ZSTD batch of two records (offsets 3 and 4): past the reader's bound.
    const bomb = await writeBomb(g.requests, { partition: 1 });
    expect(bomb.firstOffset).toBe('3');
    const run = g.skip('3', '--reason', 'zstd bomb');
    expect(await run.exited).toBe(0);
    expect(JSON.parse(run.stdout())).toMatchObject({
      kind: 'skipped',
      committed: '5',
      readable: false,
      batch: { firstOffset: '3', lastOffset: '4' },
    });
    expect(await g.committedOffset()).toBe('5');
    const [copy, ...more] = await g.dlqRecords();
    expect(more).toEqual([]);
    expect(copy?.key).toBeNull();
    expect(copy?.value?.length).toBeGreaterThan(0);
    const header = (name: string) => copy?.headers[name]?.toString();
    expect(header('error-code')).toBe('OPERATOR_SKIPPED');
    expect(header('error-message')).toBe('zstd bomb');
    expect(header('source-offset-first')).toBe('3');
    expect(header('source-offset-last')).toBe('4');
    expect(header('source-codec')).toBe('zstd');
    expect(header('source-unreadable')).toMatch(/decompress/);
  });
});
