/**
 * The topic partitions a Produce, AddPartitionsToTxn or Metadata response refused, which
 * fixes/topic-partition-errors.ts puts on kafkajs's error as `topicErrors`.
 */

export interface TopicPartitionError {
  topic: string;
  /** -1 for a topic's own error in a Metadata answer. */
  partition: number;
  /** Kafka's error type, e.g. TOPIC_AUTHORIZATION_FAILED. */
  type: string;
  /** Whether Kafka calls the error retriable (a leader moving, too few replicas in sync). */
  retriable: boolean;
}

/** kafkajs's protocol/error.js, as far as it is used here. */
interface ErrorModule {
  failure(code: number): boolean;
  createErrorFromCode(code: number): { type?: string; retriable?: boolean };
}

/**
 * Produce responses list `topics[].partitions[]`, AddPartitionsToTxn `errors[].partitionErrors[]`,
 * Metadata `topicMetadata[]` with an error of each topic's own.
 */
interface PerPartitionResponse {
  topics?: { topicName: string | null; partitions: { partition: number; errorCode: number }[] }[];
  errors?: { topic: string; partitionErrors: { partition: number; errorCode: number }[] }[];
  topicMetadata?: { topic: string; topicErrorCode: number }[];
}

/** The failing partitions of a decoded Produce or AddPartitionsToTxn response, or topics of a Metadata one. */
export function topicErrorsOf(data: unknown, errors: ErrorModule): TopicPartitionError[] {
  const response = data as PerPartitionResponse;
  const entries = [
    ...(response.topics ?? []).map((t) => ({ topic: t.topicName ?? '', partitions: t.partitions })),
    ...(response.errors ?? []).map((t) => ({ topic: t.topic, partitions: t.partitionErrors })),
    ...(response.topicMetadata ?? []).map((t) => ({
      topic: t.topic,
      partitions: [{ partition: -1, errorCode: t.topicErrorCode }],
    })),
  ];
  return entries.flatMap(({ topic, partitions }) =>
    partitions
      .filter((p) => errors.failure(p.errorCode))
      .map((p) => {
        const error = errors.createErrorFromCode(p.errorCode);
        return {
          topic,
          partition: p.partition,
          type: error.type ?? `code ${p.errorCode}`,
          retriable: error.retriable === true,
        };
      }),
  );
}
