import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import type { IncomingRecord, OutgoingRecord } from './types.ts';

export function toMessage(record: OutgoingRecord): Message {
  const message: Message = { key: record.key, value: record.value };
  if (record.headers) message.headers = record.headers;
  if (record.partition !== undefined) message.partition = record.partition;
  if (record.timestamp !== undefined) message.timestamp = String(record.timestamp);
  return message;
}

/** Groups records by topic, keeping their order (kafkajs keeps per-partition order within a topic). */
export function toTopicMessages(records: OutgoingRecord[]): { topic: string; messages: Message[] }[] {
  const byTopic = new Map<string, Message[]>();
  for (const record of records) {
    let messages = byTopic.get(record.topic);
    if (!messages) {
      messages = [];
      byTopic.set(record.topic, messages);
    }
    messages.push(toMessage(record));
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

function copyHeaders(headers: IHeaders): Record<string, Buffer | undefined> {
  const out: Record<string, Buffer | undefined> = {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    // A repeated header name arrives as an array: the last value wins, as in most Kafka clients.
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    // A header without a value (Kafka allows it; kafkajs decodes it as null) reads as absent.
    out[name] = last == null ? undefined : Buffer.isBuffer(last) ? last : Buffer.from(last);
  }
  return out;
}

/** kafkajs decodes header values to Buffers: its object is used as it is unless a name repeats. */
function headersOf(headers: IHeaders | undefined): Record<string, Buffer | undefined> {
  if (!headers) return {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !Buffer.isBuffer(value)) return copyHeaders(headers);
  }
  return headers as Record<string, Buffer | undefined>;
}

export function toIncoming(topic: string, partition: number, message: KafkaMessage): IncomingRecord {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key,
    value: message.value,
    headers: headersOf(message.headers),
    timestamp: Number(message.timestamp),
  };
}
