import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import type { RegistryConfig } from '../config/index.ts';
import { DecodeError, InvalidInputError } from '../errors.ts';
import { registryError } from './registry-errors.ts';
import { frame, HEADER_SIZE, unframe, writeHeader } from './wire-format.ts';

/**
 * `timestamp-millis` fields are plain epoch-ms JS numbers in both directions: no logical-type class
 * is registered with avsc, so such a field reads and writes as its underlying long (exact up to 2^53,
 * the year 287396), never as a Date. A Date given to `encode` is refused like any other non-long.
 * Set explicitly, for the encoders and the readers fetched from the registry alike. A fresh object
 * each time: avsc records every named type in `opts.registry`, so a shared object would make the next
 * schema with the same record name a "duplicate type name".
 */
const avroOptions = (): Partial<avro.ForSchemaOptions> => ({ logicalTypes: {} });

/** Most records fit; a larger one falls back to a second encoding pass. */
const ENCODE_HINT = 512;

export type RegistryCompatibility = keyof typeof COMPATIBILITY;

export interface SchemaRegistryOptions extends RegistryConfig {
  /**
   * Must equal the registry's own default: the client compares it with `GET /config/{subject}`, which
   * Apicurio answers with its global default even for a subject without a rule. Default BACKWARD.
   */
  compatibility?: RegistryCompatibility;
}

export interface AvroSchemaJson {
  type: 'record';
  name: string;
  namespace?: string;
  [key: string]: unknown;
}

export interface Encoder<T> {
  schemaId: number;
  subject: string;
  /** Synchronous: the Confluent wire format of `value`. InvalidInputError when it breaks the schema. */
  encode(value: T): Buffer;
}

export interface Decoded {
  schemaId: number;
  /** Full record name, e.g. `fraudlink.alerts.AlertUpserted`. */
  name: string;
  value: Record<string, unknown>;
}

export interface SchemaRegistryClient {
  /** Registers under `<topic>-<full record name>` (TopicRecordNameStrategy); the same schema keeps its id. */
  register(topic: string, schema: AvroSchemaJson): Promise<number>;
  /** Registers, then returns a sync encoder with its avsc type built once. */
  encoder<T>(topic: string, schema: AvroSchemaJson): Promise<Encoder<T>>;
  /** DecodeError for bad bytes or an id the registry does not know; SchemaRegistryError when it cannot answer. */
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

interface Reader {
  name: string;
  type: avro.Type;
}

function decodeWith(reader: Reader, schemaId: number, body: Buffer): Decoded {
  try {
    return { schemaId, name: reader.name, value: reader.type.fromBuffer(body) as Record<string, unknown> };
  } catch (err) {
    throw new DecodeError(
      `value is not a valid ${reader.name} Avro body (schema id ${schemaId}): ${(err as Error).message}`,
      { cause: err },
    );
  }
}

function encoderOf<T>(schemaId: number, subject: string, name: string, type: avro.Type): Encoder<T> {
  const invalid = (err: unknown) =>
    new InvalidInputError('AVRO_ENCODE', `value is not a valid ${name}: ${(err as Error).message}`, {
      cause: err,
    });
  return {
    schemaId,
    subject,
    encode(value) {
      let end: number;
      // Encoded straight after the header in one small pooled buffer: no second copy.
      const buffer = Buffer.allocUnsafe(ENCODE_HINT);
      try {
        end = type.encode(value, buffer, HEADER_SIZE);
        if (end < 0) return frame(schemaId, type.toBuffer(value));
      } catch (err) {
        throw invalid(err);
      }
      writeHeader(buffer, schemaId);
      return buffer.subarray(0, end);
    },
  };
}

export function createSchemaRegistry(options: SchemaRegistryOptions): SchemaRegistryClient {
  const args: ConstructorParameters<typeof SchemaRegistry>[0] = { host: options.url, retry: { retries: 5 } };
  if (options.auth) args.auth = options.auth;
  const registry = new SchemaRegistry(args, { forSchemaOptions: avroOptions() });
  const compatibility = COMPATIBILITY[options.compatibility ?? 'BACKWARD'];
  const readers = new Map<number, Reader>();
  const pending = new Map<number, Promise<Reader>>();

  const readerFor = (schemaId: number): Promise<Reader> => {
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
          throw registryError(err, `reading schema id ${schemaId}`, {
            notFound: () =>
              new DecodeError(`schema id ${schemaId} is unknown to the registry`, { cause: err }),
          });
        },
      );
      pending.set(schemaId, p);
    }
    return p;
  };

  const register = async (topic: string, schema: AvroSchemaJson): Promise<number> => {
    const subject = subjectFor(topic, schema);
    try {
      const { id } = await registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
        { subject, compatibility },
      );
      return id;
    } catch (err) {
      throw registryError(err, `registering ${subject}`);
    }
  };

  return {
    register,
    async encoder<T>(topic: string, schema: AvroSchemaJson): Promise<Encoder<T>> {
      const schemaId = await register(topic, schema);
      const type = avro.Type.forSchema(schema as avro.Schema, avroOptions());
      const name = fullName(schema);
      readers.set(schemaId, { name, type });
      return encoderOf<T>(schemaId, subjectFor(topic, schema), name, type);
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
