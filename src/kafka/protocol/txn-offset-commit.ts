import type { GroupMembership } from '../types.ts';
import {
  apiKeys,
  flexibleRequest,
  NO_TAGS,
  type ProtocolRequest,
  readTags,
  topicEntries,
  type Versions,
} from './flexible-request.ts';

/**
 * TxnOffsetCommit v3–v5, with the consumer group member's generation and id (KIP-447): the group
 * coordinator refuses the offsets of a member that is no longer in the group's current generation
 * (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), so that a member cut off from its
 * group (its session expired: a long pause) cannot commit a transaction for partitions that are
 * someone else's by then. On v5 the coordinator also enrols the offsets in the transaction itself
 * (transaction protocol v2). kafkajs's TxnOffsetCommit (v0–v1) carries neither.
 */

interface TxnOffsetTopic {
  topic: string;
  partitions: { partition: number; offset: string; metadata?: string | null }[];
}

export interface TxnOffsetCommitResult {
  throttleTime: number;
  clientSideThrottleTime: number;
  topics: { topic: string | null; partitions: { partition: number; errorCode: number }[] }[];
}

/** The TxnOffsetCommit version of a v1 transaction's offsets with a member's identity (3 or 4), if offered. */
export function memberTxnOffsetCommitVersion(versions: Versions | null | undefined): 3 | 4 | undefined {
  const max = versions?.[apiKeys.TxnOffsetCommit as number]?.maxVersion ?? 0;
  // v5 belongs to transaction protocol v2: on v1 the offsets are enrolled by AddOffsetsToTxn.
  if (max >= 4) return 4;
  return max === 3 ? 3 : undefined;
}

export function txnOffsetCommitFlexible(args: {
  version: 3 | 4 | 5;
  transactionalId: string;
  groupId: string;
  producerId: unknown;
  producerEpoch: number;
  /** Without one, generation -1 and no member id: the coordinator checks neither (as on v0). */
  membership?: GroupMembership | undefined;
  topics: TxnOffsetTopic[];
}): ProtocolRequest {
  return flexibleRequest<TxnOffsetCommitResult>({
    apiName: 'TxnOffsetCommit',
    apiVersion: args.version,
    body(e) {
      const topics = topicEntries(args.topics, (p, e) =>
        e
          .writeInt32(p.partition)
          .writeInt64(p.offset)
          .writeInt32(-1) // committed leader epoch: unknown
          .writeUVarIntString(p.metadata ?? null)
          .writeUVarInt(NO_TAGS),
      );
      return e
        .writeUVarIntString(args.transactionalId)
        .writeUVarIntString(args.groupId)
        .writeInt64(args.producerId)
        .writeInt16(args.producerEpoch)
        .writeInt32(args.membership?.generationId ?? -1)
        .writeUVarIntString(args.membership?.memberId ?? '')
        .writeUVarIntString(args.membership?.groupInstanceId ?? null)
        .writeUVarIntArray(topics, 'object')
        .writeUVarInt(NO_TAGS);
    },
    read(d) {
      const clientSideThrottleTime = d.readInt32();
      const topics =
        d.readUVarIntArray((t) => {
          const topic = t.readUVarIntString();
          const partitions =
            t.readUVarIntArray((p) => {
              const entry = { partition: p.readInt32(), errorCode: p.readInt16() };
              readTags(p);
              return entry;
            }) ?? [];
          readTags(t);
          return { topic, partitions };
        }) ?? [];
      return { throttleTime: 0, clientSideThrottleTime, topics };
    },
    errorCodes: (result) => result.topics.flatMap((t) => t.partitions.map((p) => p.errorCode)),
  });
}
