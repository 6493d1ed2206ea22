import {
  flexibleRequest,
  NO_TAGS,
  type ProtocolRequest,
  readTags,
  topicEntries,
} from './flexible-request.ts';

/**
 * OffsetFetch v7 with RequireStable (KIP-447): a group's committed offsets once every transaction
 * that commits offsets for them has completed. kafkajs's OffsetFetch (v1–v4) reads the offsets as
 * committed so far, also while a transaction that moves them is still completing: a member that
 * takes a partition over just then starts from the offset before it, and answers again what that
 * transaction answered. With RequireStable the coordinator answers UNSTABLE_OFFSET_COMMIT (88) for
 * such a partition, and the fetch is asked again (fixes/stable-offset-fetch.ts).
 */

export interface OffsetFetchArgs {
  groupId: string;
  topics: { topic: string; partitions: { partition: number }[] }[];
}
/** kafkajs's OffsetFetch result, as its v4 decoder gives it. */
export interface OffsetFetchResult {
  throttleTime: number;
  clientSideThrottleTime: number;
  responses: {
    topic: string;
    partitions: { partition: number; offset: string; metadata: string | null; errorCode: number }[];
  }[];
  errorCode: number;
}

export function offsetFetchV7(args: OffsetFetchArgs): ProtocolRequest {
  return flexibleRequest<OffsetFetchResult>({
    apiName: 'OffsetFetch',
    apiVersion: 7,
    body(e) {
      const topics = topicEntries(args.topics, (p, e) => e.writeInt32(p.partition));
      return e
        .writeUVarIntString(args.groupId)
        .writeUVarIntArray(topics, 'object')
        .writeBoolean(true) // RequireStable
        .writeUVarInt(NO_TAGS);
    },
    read(d) {
      const clientSideThrottleTime = d.readInt32();
      const responses =
        d.readUVarIntArray((t) => {
          const topic = t.readUVarIntString() as string;
          const partitions =
            t.readUVarIntArray((p) => {
              const partition = p.readInt32();
              const offset = p.readInt64().toString();
              p.readInt32(); // committed leader epoch
              const metadata = p.readUVarIntString();
              const errorCode = p.readInt16();
              readTags(p);
              return { partition, offset, metadata, errorCode };
            }) ?? [];
          readTags(t);
          return { topic, partitions };
        }) ?? [];
      return { throttleTime: 0, clientSideThrottleTime, responses, errorCode: d.readInt16() };
    },
    errorCodes: (result) => [
      result.errorCode,
      ...result.responses.flatMap((t) => t.partitions.map((p) => p.errorCode)),
    ],
  });
}
