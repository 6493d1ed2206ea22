import { describe, expect, it } from 'vitest';
import { expectCleanStop } from '../helpers/cli.ts';
import { collect, testProducer } from '../helpers/kafka.ts';
import { writeBomb } from '../kafka/unreadable-batches.fixtures.ts';
import { header, verifierHarness } from './harness.ts';

const IBAN = 'DE89370400440532013000';

/** A JSON request for IBAN on partition 0, due in two minutes. */
function request(topic: string, requestId: string) {
  return {
    topic,
    key: requestId,
    partition: 0,
    value: Buffer.from(
      JSON.stringify({ requestId, iban: IBAN, partyName: 'Anna Schmidt', requestedAt: Date.now() }),
    ),
    headers: { 'content-type': 'application/json', 'vop-deadline': String(Date.now() + 120_000) },
  };
}

describe('verifier and a record batch of the requests topic that cannot be read', () => {
  it('sends one DLQ record naming the batch, goes on, and answers the requests after it on the partition', async () => {
    const h = await verifierHarness();
    const { requestsTopic } = h.config.verifier;
    const producer = await testProducer(h.kafka);
    const dlq = await collect(h.kafka, h.config.verifier.dlqTopic);
    const replies = await collect(h.kafka, h.config.verifier.repliesTopic);
    const verifier = await h.started();
    await producer.send([request(requestsTopic, 'before')]);
    // 80 MiB of zeros in one ZSTD batch of two records: past the reader's 64 MiB bound.
    const bomb = await writeBomb(requestsTopic, { partition: 0 });
    const after = ['after-1', 'after-2', 'after-3'];
    await producer.send(after.map((id) => request(requestsTopic, id)));

    const answered = await Promise.race([
      replies.until((r) => r.length >= 4),
      verifier.exited.then((code) => Promise.reject(new Error(`the verifier exited (${code})`))),
    ]);
    expect(answered.map((r) => r.key?.toString()).sort()).toEqual([
      'after-1',
      'after-2',
      'after-3',
      'before',
    ]);
    for (const reply of answered) {
      expect(JSON.parse(reply.value?.toString() ?? '')).toMatchObject({ outcome: 'COMPLETED' });
    }
    const [dead, ...more] = await dlq.until((r) => r.length >= 1);
    expect(more).toEqual([]);
    expect(dead?.key).toBeNull();
    expect(header(dead as never, 'error-code')).toBe('REQUEST_BATCH_UNREADABLE');
    expect(header(dead as never, 'error-message')).toMatch(/could not decompress a ZSTD record batch/);
    expect(header(dead as never, 'source-topic')).toBe(requestsTopic);
    expect(header(dead as never, 'source-partition')).toBe('0');
    expect(header(dead as never, 'source-offset-first')).toBe(bomb.firstOffset);
    expect(header(dead as never, 'source-offset-last')).toBe(bomb.lastOffset);
    expect(header(dead as never, 'source-codec')).toBe('zstd');
    // The batch's compressed bytes, as the broker keeps them: a few KB.
    expect(dead?.value?.length).toBeGreaterThan(0);
    expect(verifier.stderr()).toMatch(/a record batch of the requests topic cannot be read/);
    await expectCleanStop(verifier);
    // Committed past the batch and the requests after it.
    const committed = await h.admin.groupOffsets(h.config.verifier.groupId, requestsTopic);
    expect(committed.find((c) => c.partition === 0)?.offset).toBe(String(BigInt(bomb.lastOffset) + 4n));
  });
});
