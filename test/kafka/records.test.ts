import { createRequire } from 'node:module';
import type { KafkaMessage } from '@fraudlink/kafkajs';
import { describe, expect, it } from 'vitest';
import '../../src/kafka/kafkajs.ts';
import {
  batchBytes,
  largestRecord,
  recordBytes,
  sendChunks,
  toIncoming,
  toMessage,
  toTopicMessages,
} from '../../src/kafka/records.ts';
import type { OutgoingRecord } from '../../src/kafka/types.ts';

const require = createRequire(import.meta.url);
const Record = require('@fraudlink/kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: object) => {
  size(): number;
};

const { RecordBatch } = require('@fraudlink/kafkajs/src/protocol/recordBatch/v0/index.js') as {
  RecordBatch: (b: object) => Promise<{ size(): number }>;
};

const message = (headers: KafkaMessage['headers']): KafkaMessage =>
  ({
    offset: '41',
    key: Buffer.from('k'),
    value: null,
    headers,
    timestamp: '1795339800123',
    attributes: 0,
    size: 0,
  }) as KafkaMessage;

describe('records between our types and kafkajs', () => {
  it('reads a consumed message into our record: offset as a string, timestamp as epoch ms, tombstone as null', () => {
    const record = toIncoming('t', 3, message({ 'event-id': Buffer.from('e1') }));
    expect(record).toEqual({
      topic: 't',
      partition: 3,
      offset: '41',
      key: Buffer.from('k'),
      value: null,
      headers: { 'event-id': Buffer.from('e1') },
      timestamp: 1795339800123,
    });
  });

  it('keeps the last value of a repeated header name and turns strings into bytes', () => {
    const record = toIncoming(
      't',
      0,
      message({ a: [Buffer.from('1'), Buffer.from('2')], b: 'text', c: undefined } as never),
    );
    expect(record.headers).toEqual({ a: Buffer.from('2'), b: Buffer.from('text'), c: undefined });
  });

  it('reads a header without a value (kafkajs decodes a length of -1 as null) as absent instead of throwing', () => {
    const record = toIncoming(
      't',
      0,
      message({ a: null, b: [Buffer.from('1'), null], c: Buffer.from('x') } as never),
    );
    expect(record.headers).toEqual({ a: undefined, b: undefined, c: Buffer.from('x') });
  });

  it('groups outgoing records by topic, keeping their order within each topic', () => {
    const grouped = toTopicMessages([
      { topic: 'a', key: '1', value: null },
      { topic: 'b', key: '2', value: Buffer.from('x'), partition: 1, timestamp: 5 },
      { topic: 'a', key: '3', value: null, headers: { h: 'v' } },
    ]);
    expect(grouped).toEqual([
      {
        topic: 'a',
        messages: [
          { key: '1', value: null },
          { key: '3', value: null, headers: { h: 'v' } },
        ],
      },
      { topic: 'b', messages: [{ key: '2', value: Buffer.from('x'), partition: 1, timestamp: '5' }] },
    ]);
  });
});

describe('sends cut to the size a record batch may take', () => {
  const record = (valueBytes: number, i = 0): OutgoingRecord => ({
    topic: 't',
    key: `DE89370400440532013${String(i).padStart(3, '0')}`,
    value: Buffer.alloc(valueBytes, 1),
    headers: { 'event-type': 'AlertUpserted', 'event-id': 'e'.repeat(64), 'alert-id': Buffer.from('a-1') },
  });

  it('counts a record at least at the bytes kafkajs writes for it, and at most a few more', () => {
    for (const bytes of [0, 1, 200, 70_000, 3_000_000]) {
      const r = record(bytes);
      const message = toMessage(r);
      // The offset and timestamp deltas of a large batch's last record, varints of up to 5 bytes.
      const written = Record({ ...message, offsetDelta: 2 ** 30, timestampDelta: 2 ** 30 }).size();
      expect(recordBytes(r)).toBeGreaterThanOrEqual(written);
      expect(recordBytes(r) - written).toBeLessThan(40);
    }
    expect(recordBytes({ topic: 't', key: null, value: null })).toBeGreaterThan(0);
    // Header lengths of 64 bytes and more take two-byte varints, forty of them beyond any slack.
    const headers = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`h${i}`, 'v'.repeat(100)]));
    const many = { ...record(500_000), headers };
    const written = Record({ ...toMessage(many), offsetDelta: 2 ** 30, timestampDelta: 2 ** 30 }).size();
    expect(recordBytes(many)).toBeGreaterThanOrEqual(written);
    expect(recordBytes(many) - written).toBeLessThan(40);
  });

  it('counts a record batch at least at the bytes kafkajs writes for it, framing included', async () => {
    const records = [record(0), record(300, 1), record(70_000, 2)];
    const batch = await RecordBatch({
      records: records.map((r, i) => Record({ ...toMessage(r), offsetDelta: i, timestampDelta: 0 })),
    });
    expect(batchBytes(records)).toBeGreaterThanOrEqual(batch.size());
    expect(batchBytes(records) - batch.size()).toBeLessThan(3 * 40);
    expect(largestRecord(records)).toEqual({ bytes: batchBytes([records[2] as OutgoingRecord]), topic: 't' });
  });

  it('cuts records, in order, into runs of at most the limit; a larger record runs alone', () => {
    const records = [record(400), record(400, 1), record(1500, 2), record(100, 3), record(100, 4)];
    const chunks = sendChunks(records, 1000);
    expect(chunks.flat()).toEqual(records);
    expect(chunks.map((c) => c.length)).toEqual([1, 1, 1, 2]);
    for (const chunk of chunks) {
      if (chunk.length > 1) expect(chunk.reduce((n, r) => n + recordBytes(r), 0)).toBeLessThanOrEqual(1000);
    }
    const small = [record(10), record(10, 1)];
    expect(sendChunks(small)).toEqual([small]);
    expect(sendChunks([])).toEqual([]);
  });

  it('cuts records so that each run holds one record at most of each unbatched topic, in order', () => {
    const [a0, a1, a2] = [0, 1, 2].map((i) => ({ ...record(10, i), topic: 'a' }));
    const [b0, b1] = [3, 4].map((i) => ({ ...record(10, i), topic: 'b' }));
    const records = [a0, b0, a1, b1, a2] as OutgoingRecord[];
    expect(sendChunks(records, 1000, new Set(['a']))).toEqual([[a0, b0], [a1, b1], [a2]]);
    expect(sendChunks(records, 1000, new Set(['a', 'b']))).toEqual([[a0, b0], [a1, b1], [a2]]);
    expect(sendChunks(records, 1000, new Set(['b']))).toEqual([
      [a0, b0, a1],
      [b1, a2],
    ]);
  });
});
