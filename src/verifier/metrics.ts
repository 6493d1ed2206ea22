import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface VerifierMetrics {
  requests: Counter<'outcome' | 'match'>;
  upstreamLatency: Histogram;
  inFlight: Gauge;
  commitSeconds: Histogram;
  dlq: Counter<'code'>;
  refusedReplyTopics: Counter;
  memberFenced: Counter;
  sessionRestarts: Counter;
  pausedPartitions: Gauge;
}

export function createVerifierMetrics(registry: Registry): VerifierMetrics {
  const registers = [registry];
  return {
    requests: new Counter({
      name: 'fraudlink_verifier_requests_total',
      help: 'Verification requests answered, by outcome and name-match code',
      labelNames: ['outcome', 'match'],
      registers,
    }),
    upstreamLatency: new Histogram({
      name: 'fraudlink_verifier_upstream_latency_seconds',
      help: 'Latency of POST /vop/v1/verify, retries included',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    inFlight: new Gauge({
      name: 'fraudlink_verifier_in_flight',
      help: 'Requests being verified now',
      registers,
    }),
    commitSeconds: new Histogram({
      name: 'fraudlink_verifier_batch_commit_seconds',
      help: 'Time to commit one transaction of replies and consumed offsets',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    dlq: new Counter({
      name: 'fraudlink_verifier_dlq_total',
      help: 'Requests that could not be read, sent to the DLQ, by error code',
      labelNames: ['code'],
      registers,
    }),
    refusedReplyTopics: new Counter({
      name: 'fraudlink_verifier_reply_topic_refused_total',
      help: 'Requests whose kafka_replyTopic was refused: by the allow-list, by the registry for the reply schema, or by the broker',
      registers,
    }),
    memberFenced: new Counter({
      name: 'fraudlink_verifier_member_fenced_total',
      help: 'Transactions refused because this member had been cut off from its group; their replies were dropped',
      registers,
    }),
    sessionRestarts: new Counter({
      name: 'fraudlink_verifier_session_restarts_total',
      help: 'Restarts of the Kafka session (consumer and producers) after a failure that is ridden out: a broker or registry outage',
      registers,
    }),
    pausedPartitions: new Gauge({
      name: 'fraudlink_verifier_paused_partitions',
      help: 'Partitions of the requests topic paused because they hold the most finished replies allowed, waiting for an earlier request to commit',
      registers,
    }),
  };
}
