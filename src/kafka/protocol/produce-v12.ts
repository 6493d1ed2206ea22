import {
  type Encoder,
  Encoder as encoderClass,
  flexibleRequest,
  kafkajsCodec,
  NO_TAGS,
  type ProtocolRequest,
  readTags,
} from './flexible-request.ts';

/**
 * Produce v12: v7's record batches in a flexible request; the broker enrols each partition in the
 * producer's transaction (transaction v2).
 */

interface ProduceMessage {
  timestamp?: number | string | null;
  key?: unknown;
  value?: unknown;
  headers?: unknown;
}
interface ProducePartition {
  partition: number;
  messages: ProduceMessage[];
  firstSequence?: number;
}
export interface ProduceArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  producerId?: unknown;
  producerEpoch?: number;
  compression?: number;
  topicData: { topic: string; partitions: ProducePartition[] }[];
}

/** One partition's records as kafkajs's Produce v3–v7 builds them (produce/v3/request.js). */
async function encodeRecordBatch(p: ProducePartition, args: ProduceArgs): Promise<Encoder> {
  const { Record, RecordBatch } = kafkajsCodec();
  const now = Date.now();
  const stamps = p.messages
    .map((m) => m.timestamp)
    .filter((t) => t != null)
    .sort();
  const timestamps = stamps.length === 0 ? [now] : stamps;
  const firstTimestamp = timestamps[0];
  const maxTimestamp = timestamps[timestamps.length - 1];
  const records = p.messages.map((m, i) =>
    Record({
      ...m,
      offsetDelta: i,
      timestampDelta: Number(m.timestamp || now) - Number(firstTimestamp),
    }),
  );
  return RecordBatch({
    compression: args.compression ?? 0,
    records,
    firstTimestamp,
    maxTimestamp,
    producerId: args.producerId,
    producerEpoch: args.producerEpoch,
    firstSequence: p.firstSequence,
    transactional: !!args.transactionalId,
    lastOffsetDelta: records.length - 1,
  });
}

interface ProduceResult {
  topics: {
    topicName: string | null;
    partitions: {
      partition: number;
      errorCode: number;
      baseOffset: string;
      logAppendTime: string;
      logStartOffset: string;
    }[];
  }[];
  throttleTime: number;
  clientSideThrottleTime: number;
}

export function produceV12(args: ProduceArgs): ProtocolRequest {
  return flexibleRequest<ProduceResult>({
    apiName: 'Produce',
    apiVersion: 12,
    expectResponse: () => args.acks !== 0,
    async body(e) {
      const E = encoderClass();
      const topics: Encoder[] = [];
      for (const { topic, partitions } of args.topicData) {
        const encoded: Encoder[] = [];
        for (const p of partitions) {
          const batch = await encodeRecordBatch(p, args);
          encoded.push(
            new E()
              .writeInt32(p.partition)
              .writeUVarInt(batch.size() + 1)
              .writeEncoder(batch)
              .writeUVarInt(NO_TAGS),
          );
        }
        topics.push(
          new E().writeUVarIntString(topic).writeUVarIntArray(encoded, 'object').writeUVarInt(NO_TAGS),
        );
      }
      return e
        .writeUVarIntString(args.transactionalId ?? null)
        .writeInt16(args.acks)
        .writeInt32(args.timeout)
        .writeUVarIntArray(topics, 'object')
        .writeUVarInt(NO_TAGS);
    },
    read(d) {
      const topics =
        d.readUVarIntArray((t) => {
          const topicName = t.readUVarIntString();
          const partitions =
            t.readUVarIntArray((p) => {
              const partition = {
                partition: p.readInt32(),
                errorCode: p.readInt16(),
                baseOffset: p.readInt64().toString(),
                logAppendTime: p.readInt64().toString(),
                logStartOffset: p.readInt64().toString(),
              };
              p.readUVarIntArray((e) => {
                e.readInt32(); // batch index
                e.readUVarIntString(); // its error message
                readTags(e);
              });
              p.readUVarIntString(); // error message
              readTags(p); // the current leader, on NOT_LEADER_OR_FOLLOWER
              return partition;
            }) ?? [];
          readTags(t);
          return { topicName, partitions };
        }) ?? [];
      return { topics, throttleTime: 0, clientSideThrottleTime: d.readInt32() };
    },
    errorCodes: (result) => result.topics.flatMap((t) => t.partitions.map((p) => p.errorCode)),
  });
}
