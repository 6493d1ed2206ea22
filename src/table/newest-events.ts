import type { AlertEvent } from '../alert-events.ts';
import { DecodeError } from '../errors.ts';
import type { IncomingRecord } from '../kafka/index.ts';

/** Why a record of a chunk was skipped: an unreadable batch, or a record that is not an alert event. */
export type SkippedRecord =
  | { record: IncomingRecord; reason: 'unreadable batch' }
  | { record: IncomingRecord; reason: 'undecodable'; error: DecodeError };

export interface NewestEvents {
  /** Each key's newest event, in the order of their records in the chunk. */
  events: AlertEvent[];
  /** Records skipped (also reported through `onSkipped`, newest first). */
  skipped: number;
}

/**
 * The events a chunk of one partition's records leaves the table with: for each key, the newest
 * record that decodes. The chunk is walked from its last record to its first, and a record is
 * decoded only when no later record of its key has decoded: an older one would be overwritten in the
 * same step, so it is not decoded at all (nor checked). An undecodable record is skipped, and the
 * record before it of the same key counts instead. A decoding failure other than DecodeError (the
 * registry out of reach) is thrown as it is.
 */
export async function newestEvents(
  records: readonly IncomingRecord[],
  decode: (record: IncomingRecord) => AlertEvent | Promise<AlertEvent>,
  onSkipped: (skipped: SkippedRecord) => void,
): Promise<NewestEvents> {
  const decided = new Set<string>();
  const newestFirst: AlertEvent[] = [];
  let skipped = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i] as IncomingRecord;
    if (record.unreadableBatch) {
      skipped++;
      onSkipped({ record, reason: 'unreadable batch' });
      continue;
    }
    // The key is the IBAN the event applies to (alert-events.ts eventOf).
    const key = record.key?.toString('utf8') ?? '';
    if (decided.has(key)) continue;
    try {
      const decoding = decode(record);
      newestFirst.push(decoding instanceof Promise ? await decoding : decoding);
      decided.add(key);
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err;
      skipped++;
      onSkipped({ record, reason: 'undecodable', error: err });
    }
  }
  return { events: newestFirst.reverse(), skipped };
}
