import { DecodeError, SchemaRegistryError } from './errors.ts';
import type { Decoded, IncomingRecord, SchemaRegistryClient } from './kafka/index.ts';
import { type Logger, maskIban } from './logger.ts';
import { SchemaNames } from './schemas.ts';

/** An alert as its last AlertUpserted says (Avro field names; instants as epoch ms). */
export interface AlertState {
  eventId: string;
  alertId: string;
  iban: string;
  bic: string | null;
  qualification: string;
  qualificationRaw: string | null;
  reportsCount: number;
  updatedAt: number;
  observedAt: number;
}

/** What one record of the alerts topic does to the table of its key (the IBAN). */
export interface AlertEvent {
  type: 'AlertUpserted' | 'AlertDeactivated' | 'Tombstone';
  iban: string;
  /** The new state, or null when the alert is removed. */
  alert: AlertState | null;
}

const ALERT_EVENTS = new Set<string>([SchemaNames.AlertUpserted, SchemaNames.AlertDeactivated]);

/** The largest epoch millisecond a Date holds: past it, an instant has no ISO-8601 spelling. */
const MAX_INSTANT_MS = 8.64e15;

const isText = (v: unknown) => typeof v === 'string';
const isOptionalText = (v: unknown) => v === null || typeof v === 'string';
const isInstant = (v: unknown) => Number.isInteger(v) && Math.abs(v as number) <= MAX_INSTANT_MS;

// Built once: the check runs for every decoded event.
const ALERT_FIELD_CHECKS: readonly (readonly [string, (v: unknown) => boolean])[] = [
  ['eventId', isText],
  ['alertId', isText],
  ['iban', isText],
  ['bic', isOptionalText],
  ['qualification', isText],
  ['qualificationRaw', isOptionalText],
  ['reportsCount', Number.isInteger],
  ['updatedAt', isInstant],
  ['observedAt', isInstant],
];

/**
 * The first field of an AlertUpserted's value that the table cannot hold, or undefined. A value
 * written with another version of the schema (a field removed, as BACKWARD compatibility allows) or
 * by another producer decodes under its own writer's schema: its fields are checked here, so that
 * one such record is skipped like an undecodable one instead of failing every write of the table.
 */
function missingAlertField(value: Record<string, unknown>): string | undefined {
  for (const [field, valid] of ALERT_FIELD_CHECKS) if (!valid(value[field])) return field;
  return undefined;
}

/** The table's rule: the last AlertUpserted per IBAN, removed by an AlertDeactivated or a tombstone. */
function eventOf(record: IncomingRecord, decoded: Decoded | null): AlertEvent {
  const iban = record.key?.toString('utf8') ?? '';
  if (decoded === null) return { type: 'Tombstone', iban, alert: null };
  if (decoded.name === SchemaNames.AlertUpserted) {
    return { type: 'AlertUpserted', iban, alert: decoded.value as unknown as AlertState };
  }
  return { type: 'AlertDeactivated', iban, alert: null };
}

/**
 * Decodes records of the alerts topic `topic` through the registry into alert events. A record that
 * is not an alert event (undecodable, or of another schema) throws DecodeError, which a reader may
 * skip; a registry that cannot be reached throws SchemaRegistryError, which says nothing about the
 * record and must never be skipped. A promise only when the record's schema must be fetched first:
 * almost every record takes the synchronous path, with no promise and no await per record.
 */
export function alertEventDecoder(
  registry: SchemaRegistryClient,
  topic: string,
): (record: IncomingRecord) => AlertEvent | Promise<AlertEvent> {
  const undecodable = (record: IncomingRecord, err: unknown): Error =>
    err instanceof SchemaRegistryError
      ? err
      : new DecodeError(
          `${topic} partition ${record.partition} offset ${record.offset} cannot be decoded: ${(err as Error).message}`,
          { cause: err },
        );
  const checked = (record: IncomingRecord, decoded: Decoded): AlertEvent => {
    if (!ALERT_EVENTS.has(decoded.name)) {
      // A record of another schema (a future event type, a message on the wrong topic) is not an
      // alert event: skippable like an undecodable one.
      throw new DecodeError(
        `${topic} partition ${record.partition} offset ${record.offset} holds a ${decoded.name}, not an alert event`,
      );
    }
    if (decoded.name === SchemaNames.AlertUpserted) {
      const field = missingAlertField(decoded.value as Record<string, unknown>);
      if (field !== undefined) {
        throw new DecodeError(
          `${topic} partition ${record.partition} offset ${record.offset} holds an AlertUpserted whose ${field} is missing or out of range`,
        );
      }
    }
    return eventOf(record, decoded);
  };
  return (record) => {
    const { value } = record;
    if (value === null) return eventOf(record, null);
    let cached: Decoded | undefined;
    try {
      cached = registry.decodeCached(value);
    } catch (err) {
      throw undecodable(record, err);
    }
    if (cached) return checked(record, cached);
    return registry.decode(value).then(
      (decoded) => checked(record, decoded),
      (err: unknown) => {
        throw undecodable(record, err);
      },
    );
  };
}

/** Logs a record skipped as not an alert event (DecodeError), its IBAN masked. */
export function warnSkipped(logger: Pick<Logger, 'warn'>, record: IncomingRecord, err: unknown): void {
  logger.warn(
    {
      err,
      partition: record.partition,
      offset: record.offset,
      iban: maskIban(record.key?.toString('utf8') ?? ''),
    },
    "skipping an undecodable record: this IBAN's state in the table may be out of date",
  );
}
