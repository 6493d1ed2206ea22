import type { HeldLoad, PartitionProgress, TopicPartition } from './progress.ts';

/**
 * How much finished-but-uncommitted work the verifier holds before it stops fetching. Replies
 * commit in offset order, so one slow request (a long deadline, a slow upstream) holds back every
 * reply after it on its partition, and an unreadable request's DLQ copy is as large as the request
 * (up to the requests topic's max.message.bytes, about 1 MB by default).
 */
export interface HeldReplyLimits {
  /** Replies (and DLQ copies) one partition holds before it is paused. */
  partitionReplies: number;
  /** Bytes of those records one partition holds before it is paused. */
  partitionBytes: number;
  /** Replies all partitions hold together before every partition holding any is paused. */
  totalReplies: number;
  /** Bytes all partitions hold together before every partition holding any is paused. */
  totalBytes: number;
}

const MiB = 1024 * 1024;

/**
 * 1,000 replies or 8 MiB per partition, 10,000 replies or 32 MiB in all. A reply is a few hundred
 * bytes: the count bounds the ordinary case (a thousand requests behind a slow one is far more than
 * any requester's burst at the default concurrency of 64), the bytes the DLQ copies of large
 * unreadable requests. Each partition may go past its limit by what one fetch handed out (kafkajs's
 * 8 MiB per partition): the records of a batch under way are all handed out.
 */
export const HELD_REPLY_LIMITS: Readonly<HeldReplyLimits> = Object.freeze({
  partitionReplies: 1000,
  partitionBytes: 8 * MiB,
  totalReplies: 10_000,
  totalBytes: 32 * MiB,
});

const over = (load: HeldLoad, replies: number, bytes: number) =>
  load.replies >= replies || load.bytes >= bytes;

/** The consumer's pause and resume, for the partitions of one topic each. */
export interface PartitionPauser {
  pause(partitions: { topic: string; partitions: number[] }[]): void;
  resume(partitions: { topic: string; partitions: number[] }[]): void;
}

const keyOf = ({ topic, partition }: TopicPartition) => `${topic}\u0000${partition}`;

/**
 * Pauses the partitions of the requests topic that hold too much finished-but-uncommitted work
 * (HeldReplyLimits), and resumes them once their commits bring them back under the limits.
 */
export class HeldReplies<R> {
  readonly #progress: PartitionProgress<R>;
  readonly #limits: HeldReplyLimits;
  readonly #consumer: PartitionPauser;
  readonly #onChange: (change: {
    paused: TopicPartition[];
    resumed: TopicPartition[];
    held: HeldLoad;
  }) => void;
  readonly #paused = new Map<string, TopicPartition>();

  constructor(options: {
    progress: PartitionProgress<R>;
    limits: HeldReplyLimits;
    consumer: PartitionPauser;
    onChange(change: { paused: TopicPartition[]; resumed: TopicPartition[]; held: HeldLoad }): void;
  }) {
    this.#progress = options.progress;
    this.#limits = options.limits;
    this.#consumer = options.consumer;
    this.#onChange = options.onChange;
  }

  get pausedCount(): number {
    return this.#paused.size;
  }

  #partitionOver(tp: TopicPartition): boolean {
    const { partitionReplies, partitionBytes } = this.#limits;
    return over(this.#progress.held(tp.topic, tp.partition), partitionReplies, partitionBytes);
  }

  #totalOver(): boolean {
    return over(this.#progress.totalHeld, this.#limits.totalReplies, this.#limits.totalBytes);
  }

  /** After a request of `finished`'s partition finished: pauses what went over a limit. */
  finished(finished: TopicPartition): void {
    const due = this.#totalOver()
      ? this.#progress.partitions().filter((tp) => this.#progress.held(tp.topic, tp.partition).replies > 0)
      : this.#partitionOver(finished)
        ? [finished]
        : [];
    const paused = due.filter((tp) => !this.#paused.has(keyOf(tp)));
    if (paused.length === 0) return;
    for (const tp of paused) this.#paused.set(keyOf(tp), tp);
    this.#consumer.pause(grouped(paused));
    this.#onChange({ paused, resumed: [], held: this.#progress.totalHeld });
  }

  /** After a commit, or work dropped: resumes the paused partitions back under every limit. */
  review(): void {
    if (this.#paused.size === 0 || this.#totalOver()) return;
    const resumed = [...this.#paused.values()].filter((tp) => !this.#partitionOver(tp));
    if (resumed.length === 0) return;
    for (const tp of resumed) this.#paused.delete(keyOf(tp));
    this.#consumer.resume(grouped(resumed));
    this.#onChange({ paused: [], resumed, held: this.#progress.totalHeld });
  }
}

function grouped(list: TopicPartition[]): { topic: string; partitions: number[] }[] {
  const byTopic = new Map<string, number[]>();
  for (const { topic, partition } of list) byTopic.set(topic, [...(byTopic.get(topic) ?? []), partition]);
  return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
}
