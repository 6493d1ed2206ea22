import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import { DecodeError } from '../../src/errors.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { testClients } from '../helpers/kafka.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

const event = {
  eventId: 'e'.repeat(64),
  alertId: 'a-1',
  iban: 'DE89370400440532013000',
  bic: null,
  qualification: 'CONFIRMED',
  qualificationRaw: null,
  reportsCount: 2,
  updatedAt: 1795339800123,
  observedAt: 1795339900456,
};

describe('schema registry on a real registry', () => {
  it('registers two record types on one topic under TopicRecordNameStrategy subjects and round-trips both', async () => {
    const { registry } = testClients();
    const topic = uniqueName('alerts');
    const upserted = await registry.encoder(topic, loadSchema(SchemaNames.AlertUpserted));
    const deactivated = await registry.encoder(topic, loadSchema(SchemaNames.AlertDeactivated));
    expect(upserted.subject).toBe(`${topic}-fraudlink.alerts.AlertUpserted`);
    expect(deactivated.subject).toBe(`${topic}-fraudlink.alerts.AlertDeactivated`);
    expect(upserted.schemaId).not.toBe(deactivated.schemaId);

    const again = await registry.encoder(topic, loadSchema(SchemaNames.AlertUpserted));
    expect(again.schemaId).toBe(upserted.schemaId);

    const a = await registry.decode(upserted.encode(event));
    expect(a).toEqual({ schemaId: upserted.schemaId, name: 'fraudlink.alerts.AlertUpserted', value: event });
    expect(typeof a.value.updatedAt).toBe('number');
    const b = await registry.decode(
      deactivated.encode({ ...event, qualification: 'UNKNOWN', qualificationRaw: 'ESCALATED' }),
    );
    expect(b.name).toBe('fraudlink.alerts.AlertDeactivated');
    expect(b.value).toMatchObject({ qualification: 'UNKNOWN', qualificationRaw: 'ESCALATED' });
  });

  it('is readable by a client that knows only the registry URL', async () => {
    const { registry } = testClients();
    const topic = uniqueName('alerts');
    const encoder = await registry.encoder(topic, loadSchema(SchemaNames.AlertUpserted));
    const independent = new SchemaRegistry({ host: stackEnv().SCHEMA_REGISTRY_URL });
    expect(await independent.decode(encoder.encode(event))).toEqual(event);
  });

  it('names what is wrong with bytes that are not the wire format', async () => {
    const { registry } = testClients();
    await expect(registry.decode(Buffer.from([1, 0, 0, 0, 1, 2]))).rejects.toThrow(
      /not the wire-format magic byte 0/,
    );
    await expect(registry.decode(Buffer.from([0, 0x7f, 0xff, 0xff, 0xff, 2]))).rejects.toBeInstanceOf(
      DecodeError,
    );
    await expect(registry.decode(null)).rejects.toThrow(/tombstone/);
  });
});
