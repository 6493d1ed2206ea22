import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { toIncoming, toTopicMessages } from '../../src/kafka/records.ts';

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
