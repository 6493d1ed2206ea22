import { describe, expect, it } from 'vitest';
import { alertEventDecoder } from '../src/alert-events.ts';
import { DecodeError } from '../src/errors.ts';
import type { IncomingRecord, SchemaRegistryClient } from '../src/kafka/index.ts';
import { SchemaNames } from '../src/schemas.ts';

const alert = {
  eventId: 'e'.repeat(64),
  alertId: 'A-1',
  iban: 'DE89370400440532013000',
  bic: null,
  qualification: 'CONFIRMED',
  qualificationRaw: null,
  reportsCount: 2,
  updatedAt: 1_764_000_000_000,
  observedAt: 1_764_000_000_100,
};

/** A registry that decodes every value as an AlertUpserted holding `value` (a pure stand-in). */
const registryDecoding = (value: Record<string, unknown>) =>
  ({
    decodeCached: () => ({ schemaId: 1, name: SchemaNames.AlertUpserted, value }),
  }) as unknown as SchemaRegistryClient;

const record = {
  topic: 'fraud.alerts.v1',
  partition: 0,
  offset: '7',
  key: Buffer.from(alert.iban),
  value: Buffer.from([0, 0, 0, 0, 1]),
  headers: {},
} as unknown as IncomingRecord;

describe('alertEventDecoder', () => {
  it('takes a complete AlertUpserted', () => {
    const decode = alertEventDecoder(registryDecoding(alert), 'fraud.alerts.v1');
    expect(decode(record)).toMatchObject({ type: 'AlertUpserted', alert });
  });

  it('refuses, as undecodable, an AlertUpserted the table cannot hold: a field missing or an instant no Date spells', () => {
    const { reportsCount: _, ...withoutCount } = alert;
    for (const value of [withoutCount, { ...alert, alertId: null }, { ...alert, updatedAt: 9e15 }]) {
      const decode = alertEventDecoder(registryDecoding(value), 'fraud.alerts.v1');
      expect(() => decode(record)).toThrow(DecodeError);
    }
  });
});
