import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import type { RegistryConfig } from '../config/index.ts';
import { DecodeError, SchemaRegistryError } from '../errors.ts';
import { frame, HEADER_SIZE, unframe } from './wire-format.ts';

/** Most records fit; a larger one falls back to a second encoding pass. */
const ENCODE_HINT = 512;

/**
 * `timestamp-millis` fields are plain epoch-ms numbers on both sides: no logical-type class is
 * registered with avsc, so a long stays a JS number (exact up to 2^53, i.e. the year 287396) and
 * nothing turns into a Date behind the caller's back.
 */
export interface AvroSchemaJson {
  type: 'record';
  name: string;
  namespace?: string;
  [key: string]: unknown;
}

export interface Encoder<T> {
  schemaId: number;
  subject: string;
  encode(value: T): Buffer;
}

export interface Decoded {
  schemaId: number;
  /** Full record name, e.g. `fraudlink.alerts.AlertUpserted`. */
  name: string;
  value: Record<string, unknown>;
}

export interface SchemaRegistryClient {
  /** Registers under `<topic>-<full record name>` (TopicRecordNameStrategy) and returns a sync encoder. */
  encoder<T>(topic: string, schema: AvroSchemaJson): Promise<Encoder<T>>;
  decode(buffer: Buffer | null): Promise<Decoded>;
  /** The synchronous fast path: undefined when the schema id is not cached yet. */
  decodeCached(buffer: Buffer | null): Decoded | undefined;
}

export function fullName(schema: AvroSchemaJson): string {
  return schema.namespace ? `${schema.namespace}.${schema.name}` : schema.name;
}

export function subjectFor(topic: string, schema: AvroSchemaJson): string {
  return `${topic}-${fullName(schema)}`;
}

interface ReaderType {
  name: string;
  type: avro.Type;
}

export function createSchemaRegistry(config: RegistryConfig): SchemaRegistryClient {
  const args: ConstructorParameters<typeof SchemaRegistry>[0] = { host: config.url, retry: { retries: 5 } };
  if (config.auth) args.auth = config.auth;
  const registry = new SchemaRegistry(args);
  const readers = new Map<number, ReaderType>();
  const pending = new Map<number, Promise<ReaderType>>();

  const readerFor = (schemaId: number): Promise<ReaderType> => {
    let p = pending.get(schemaId);
    if (!p) {
      p = registry.getSchema(schemaId).then(
        (schema) => {
          const type = schema as unknown as avro.Type;
          const reader = { name: type.name ?? '(anonymous)', type };
          readers.set(schemaId, reader);
          return reader;
        },
        (err: unknown) => {
          pending.delete(schemaId);
          throw new DecodeError(`schema id ${schemaId} cannot be read from the registry`, { cause: err });
        },
      );
      pending.set(schemaId, p);
    }
    return p;
  };

  const decodeWith = (reader: ReaderType, schemaId: number, body: Buffer): Decoded => {
    try {
      return { schemaId, name: reader.name, value: reader.type.fromBuffer(body) as Record<string, unknown> };
    } catch (err) {
      throw new DecodeError(`value is not a valid ${reader.name} Avro body (schema id ${schemaId})`, {
        cause: err,
      });
    }
  };

  return {
    async encoder<T>(topic: string, schema: AvroSchemaJson): Promise<Encoder<T>> {
      const subject = subjectFor(topic, schema);
      let schemaId: number;
      try {
        ({ id: schemaId } = await registry.register(
          { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
          { subject, compatibility: COMPATIBILITY.BACKWARD },
        ));
      } catch (err) {
        throw new SchemaRegistryError(`registering ${subject} failed: ${(err as Error).message}`, {
          cause: err,
          retriable: /ECONNREFUSED|ECONNRESET|ETIMEDOUT|5\d\d/.test(String((err as Error).message)),
        });
      }
      const type = avro.Type.forSchema(schema as avro.Schema);
      readers.set(schemaId, { name: fullName(schema), type });
      return {
        schemaId,
        subject,
        encode: (value: T) => {
          // Encode straight after the 5-byte header in one small pooled buffer: no second copy.
          const buffer = Buffer.allocUnsafe(ENCODE_HINT);
          const end = type.encode(value, buffer, HEADER_SIZE);
          if (end < 0) return frame(schemaId, type.toBuffer(value));
          buffer[0] = 0;
          buffer.writeUInt32BE(schemaId, 1);
          return buffer.subarray(0, end);
        },
      };
    },
    decodeCached(buffer) {
      const { schemaId, body } = unframe(buffer);
      const reader = readers.get(schemaId);
      return reader ? decodeWith(reader, schemaId, body) : undefined;
    },
    async decode(buffer) {
      const { schemaId, body } = unframe(buffer);
      const reader = readers.get(schemaId) ?? (await readerFor(schemaId));
      return decodeWith(reader, schemaId, body);
    },
  };
}
