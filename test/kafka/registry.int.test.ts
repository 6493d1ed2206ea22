import { readFileSync } from 'node:fs';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { DecodeError, InvalidInputError, isRetriable, SchemaRegistryError } from '../../src/errors.ts';
import { type AvroSchemaJson, createSchemaRegistry } from '../../src/kafka/index.ts';
import { frame } from '../../src/kafka/wire-format.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { testClients } from '../helpers/kafka.ts';
import { ALERT_UPSERTED, DATE_TIME_JSON_SCHEMA, registeredSchema } from '../helpers/registry.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';

const event = ALERT_UPSERTED;

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
    await expect(registry.decode(Buffer.from([0, 0x7f, 0xff, 0xff, 0xff, 2]))).rejects.toThrow(
      'schema id 2147483647 is unknown to the registry',
    );
    await expect(registry.decode(null)).rejects.toThrow(/tombstone/);
  });

  it('reads a value framed with the id of a JSON or Protobuf schema as bad data, naming its type', async () => {
    const { registry } = testClients();
    const subject = uniqueName('payments');
    // One the registry client cannot even build (ajv knows no `date-time`), and one it could.
    const json = await registeredSchema(`${subject}-json`, 'JSON', DATE_TIME_JSON_SCHEMA);
    const proto = await registeredSchema(
      `${subject}-proto`,
      'PROTOBUF',
      'syntax = "proto3";\nmessage M { string a = 1; }\n',
    );
    const body = Buffer.from('{"at":"2020-01-01T00:00:00Z"}');
    for (const [id, type] of [
      [json, 'JSON'],
      [proto, 'PROTOBUF'],
    ] as const) {
      const err = await registry.decode(frame(id, body)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DecodeError);
      expect((err as Error).message).toBe(`schema id ${id} is a ${type} schema, not an Avro one`);
    }
  });

  it("decodes a value whose Avro schema references another subject's record", async () => {
    const { registry } = testClients();
    const subject = uniqueName('parcels');
    const inner = {
      type: 'record',
      name: 'Address',
      namespace: 'fraudlink.test',
      fields: [{ name: 'city', type: 'string' }],
    };
    const outer = {
      type: 'record',
      name: 'Parcel',
      namespace: 'fraudlink.test',
      fields: [{ name: 'to', type: 'fraudlink.test.Address' }],
    };
    await registeredSchema(`${subject}-address`, 'AVRO', JSON.stringify(inner));
    const id = await registeredSchema(`${subject}-parcel`, 'AVRO', JSON.stringify(outer), [
      { name: 'fraudlink.test.Address', subject: `${subject}-address`, version: 1 },
    ]);
    const body = avro.Type.forSchema({
      ...outer,
      fields: [{ name: 'to', type: inner }],
    } as avro.Schema).toBuffer({
      to: { city: 'Berlin' },
    });
    expect(await registry.decode(frame(id, body))).toEqual({
      schemaId: id,
      name: 'fraudlink.test.Parcel',
      value: { to: { city: 'Berlin' } },
    });
  });

  it('names a registry URL that misses the API root, rather than an object printed as [object Object]', async () => {
    const url = stackEnv().SCHEMA_REGISTRY_URL.replace(/\/ccompat\/v7$/, '/no-such-api');
    const registry = createSchemaRegistry({ url });
    const err = await registry
      .encoder(uniqueName('alerts'), loadSchema(SchemaNames.AlertUpserted))
      .catch((e) => e);
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(false);
    expect(err.message).not.toContain('[object Object]');
    expect(err.message).toMatch(
      /status 404, not from a schema registry: does SCHEMA_REGISTRY_URL name its API root/,
    );
  });
});

const testSchema = (file: string) =>
  JSON.parse(readFileSync(new URL(`./schemas/${file}.avsc`, import.meta.url), 'utf8')) as AvroSchemaJson;

describe('schema registry with enums that have defaults and timestamp-millis fields', () => {
  const shippedAt = 1795339800123;
  const shipped = { parcelId: 'p-1', carrier: 'COURIER', shippedAt, deliverBy: shippedAt + 86_400_000 };

  it('round-trips two record types of one topic, keeping timestamp-millis as epoch-ms numbers', async () => {
    const { registry } = testClients();
    const topic = uniqueName('parcels');
    const shippedEncoder = await registry.encoder(topic, testSchema('fraudlink.test.ParcelShipped'));
    const lostEncoder = await registry.encoder(topic, testSchema('fraudlink.test.ParcelLost'));
    expect(await registry.register(topic, testSchema('fraudlink.test.ParcelShipped'))).toBe(
      shippedEncoder.schemaId,
    );
    expect(lostEncoder.subject).toBe(`${topic}-fraudlink.test.ParcelLost`);

    // A fresh client knows no schema yet: the first decode fetches it, the next ones are synchronous.
    const { registry: reader } = testClients();
    const bytes = shippedEncoder.encode(shipped);
    expect(reader.decodeCached(bytes)).toBeUndefined();
    const decoded = await reader.decode(bytes);
    expect(decoded).toEqual({
      schemaId: shippedEncoder.schemaId,
      name: 'fraudlink.test.ParcelShipped',
      value: shipped,
    });
    expect(typeof decoded.value.shippedAt).toBe('number');
    expect(reader.decodeCached(lostEncoder.encode({ parcelId: 'p-1', lostAt: shippedAt }))).toBeUndefined();
    expect(await reader.decode(lostEncoder.encode({ parcelId: 'p-1', lostAt: shippedAt }))).toMatchObject({
      name: 'fraudlink.test.ParcelLost',
      value: { lostAt: shippedAt },
    });
    expect(reader.decodeCached(bytes)?.value).toEqual(shipped);
  });

  it('refuses a Date or an unknown enum symbol at encoding with a typed error naming the record', async () => {
    const { registry } = testClients();
    const encoder = await registry.encoder(uniqueName('parcels'), testSchema('fraudlink.test.ParcelShipped'));
    const asDate = () => encoder.encode({ ...shipped, shippedAt: new Date(shippedAt) });
    expect(asDate).toThrow(InvalidInputError);
    expect(asDate).toThrow(/not a valid fraudlink.test.ParcelShipped/);
    expect(() => encoder.encode({ ...shipped, carrier: 'PIGEON' })).toThrow(InvalidInputError);
  });

  it('encodes records larger than the first buffer guess', async () => {
    const { registry } = testClients();
    const encoder = await registry.encoder(uniqueName('parcels'), testSchema('fraudlink.test.ParcelShipped'));
    const big = { ...shipped, parcelId: 'x'.repeat(10_000) };
    expect((await registry.decode(encoder.encode(big))).value).toEqual(big);
  });

  it('accepts a new version that adds an enum symbol and decodes data written with either version', async () => {
    const { registry } = testClients();
    const topic = uniqueName('parcels');
    const v1 = await registry.encoder(topic, testSchema('fraudlink.test.ParcelShipped'));
    const v2 = await registry.encoder(topic, testSchema('fraudlink.test.ParcelShipped.v2'));
    expect(v2.schemaId).not.toBe(v1.schemaId);
    const { registry: reader } = testClients();
    expect((await reader.decode(v1.encode(shipped))).value).toEqual(shipped);
    expect((await reader.decode(v2.encode({ ...shipped, carrier: 'DRONE' }))).value.carrier).toBe('DRONE');
  });

  it('names a body that does not match its schema', async () => {
    const { registry } = testClients();
    const encoder = await registry.encoder(uniqueName('parcels'), testSchema('fraudlink.test.ParcelShipped'));
    const truncated = encoder.encode(shipped).subarray(0, 8);
    await expect(registry.decode(truncated)).rejects.toThrow(
      /not a valid fraudlink.test.ParcelShipped Avro body \(schema id \d+\)/,
    );
  });

  it('reports an unreachable registry as a retriable SchemaRegistryError, not as undecodable data', async () => {
    const unreachable = createSchemaRegistry({ url: 'http://127.0.0.1:9/apis/ccompat/v7' });
    const failure = await unreachable.decode(Buffer.from([0, 0, 0, 0, 1, 2])).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(failure)).toBe(true);
  });
});
