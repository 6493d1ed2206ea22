import type { AlertEvent } from '../alert-events.ts';
import { DecodeError } from '../errors.ts';
import type { IncomingRecord } from '../kafka/index.ts';
import type { AppliedSteps } from './store.ts';

/**
 * Events read from the topic but not yet written to the store: each IBAN's newest event, and each
 * partition's next offset. An IBAN that changes again before they are written is written once, with
 * its newest event: while catching up with a backlog, most events of a busy IBAN are never written.
 * Steps are added whole (their events with their position), so what is drained and written in one
 * transaction leaves the store as if each step had been written in turn.
 */
export class PendingSteps {
  readonly #events = new Map<string, AlertEvent>();
  readonly #offsets = new Map<number, bigint>();
  readonly #clock: () => number;
  #since = 0;

  /** `clock` dates what is held (epoch ms). */
  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  /** Holds a whole step: its events, each as its IBAN's newest, and `next` as `partition`'s next offset. */
  add(partition: number, next: bigint, events: readonly AlertEvent[]): void {
    if (this.empty) this.#since = this.#clock();
    for (const event of events) this.#events.set(event.iban, event);
    if (next > (this.#offsets.get(partition) ?? -1n)) this.#offsets.set(partition, next);
  }

  /** Distinct IBANs held: what writing them costs, and what they hold in memory. */
  get ibans(): number {
    return this.#events.size;
  }

  /** When the first event or position now held was added (epoch ms); meaningless when empty. */
  get since(): number {
    return this.#since;
  }

  get empty(): boolean {
    // Every step held has a position, events or not.
    return this.#offsets.size === 0;
  }

  /** What is held, and forgets it. */
  drain(): AppliedSteps {
    const steps = { offsets: new Map(this.#offsets), events: [...this.#events.values()] };
    this.#offsets.clear();
    this.#events.clear();
    return steps;
  }
}

/** Why a record was set aside: an unreadable batch, or a record that is not an alert event. */
export type SkippedRecord =
  | { record: IncomingRecord; reason: 'unreadable batch' }
  | { record: IncomingRecord; reason: 'undecodable'; error: DecodeError };

/**
 * Decodes a step (records of one partition, in order) and holds it in `pending`, whole, and resolves
 * with how many of its records were events and the position it leaves its partition at. A record set aside (DecodeError, unreadable batch) goes
 * to `onSkipped` and leaves its IBAN's previous event in place. Any other failure (the registry out
 * of reach) says nothing about the record: it rejects, and nothing of the step is held. Decoding
 * waits only when a record's schema must be fetched first.
 */
export async function holdStep(
  pending: PendingSteps,
  records: readonly IncomingRecord[],
  decode: (record: IncomingRecord) => AlertEvent | Promise<AlertEvent>,
  onSkipped: (skipped: SkippedRecord) => void,
): Promise<{ events: number; partition: number; next: bigint }> {
  const events: AlertEvent[] = [];
  for (const record of records) {
    if (record.unreadableBatch) {
      onSkipped({ record, reason: 'unreadable batch' });
      continue;
    }
    try {
      const decoding = decode(record);
      events.push(decoding instanceof Promise ? await decoding : decoding);
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err;
      onSkipped({ record, reason: 'undecodable', error: err });
    }
  }
  const last = records.at(-1);
  if (!last) throw new RangeError('a step holds at least one record');
  const next = BigInt(last.offset) + 1n;
  pending.add(last.partition, next, events);
  return { events: events.length, partition: last.partition, next };
}
