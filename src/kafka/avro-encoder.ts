import avro from 'avsc';
import { InvalidInputError } from '../errors.ts';
import { frame, HEADER_SIZE, writeHeader } from './wire-format.ts';

/**
 * Avro encoding in the Confluent wire format, without a registry: given a schema and the id the
 * registry gave it. Kept apart from registry.ts so a worker thread can encode without loading the
 * registry client or kafkajs.
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
  /** Synchronous: the Confluent wire format of `value`. InvalidInputError when it breaks the schema. */
  encode(value: T): Buffer;
  /**
   * Writes the wire format of `value` into `target` at `offset` and returns the end offset, or a
   * negative number when it does not fit (nothing usable is written then). InvalidInputError as above.
   */
  encodeInto(value: T, target: Buffer, offset: number): number;
}

/**
 * `timestamp-millis` fields are plain epoch-ms JS numbers in both directions: no logical-type class
 * is registered with avsc, so such a field reads and writes as its underlying long (exact up to 2^53,
 * the year 287396), never as a Date. A Date given to `encode` is refused like any other non-long.
 * Set explicitly, for the encoders and the readers fetched from the registry alike. A fresh object
 * each time: avsc records every named type in `opts.registry`, so a shared object would make the next
 * schema with the same record name a "duplicate type name".
 */
export const avroOptions = (): Partial<avro.ForSchemaOptions> => ({ logicalTypes: {} });

/** Most records fit; a larger one falls back to a second encoding pass. */
const ENCODE_HINT = 512;

export function fullName(schema: AvroSchemaJson): string {
  return schema.namespace ? `${schema.namespace}.${schema.name}` : schema.name;
}

export function subjectFor(topic: string, schema: AvroSchemaJson): string {
  return `${topic}-${fullName(schema)}`;
}

/** The avsc type of a schema, built with the project's options (see avroOptions). */
export function avroTypeOf(schema: AvroSchemaJson): avro.Type {
  return avro.Type.forSchema(schema as avro.Schema, avroOptions());
}

/** A sync encoder for a schema the registry already knows under `schemaId`, its avsc type built once. */
export function avroEncoder<T>(
  schemaId: number,
  subject: string,
  schema: AvroSchemaJson,
  type: avro.Type = avroTypeOf(schema),
): Encoder<T> {
  const name = fullName(schema);
  const invalid = (err: unknown) =>
    new InvalidInputError('AVRO_ENCODE', `value is not a valid ${name}: ${(err as Error).message}`, {
      cause: err,
    });
  // Checks the id once: writeHeader would throw a RangeError on every call otherwise.
  writeHeader(Buffer.alloc(HEADER_SIZE), schemaId);
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
    encodeInto(value, target, offset) {
      if (target.length - offset < HEADER_SIZE) return -1;
      let end: number;
      try {
        end = type.encode(value, target, offset + HEADER_SIZE);
      } catch (err) {
        throw invalid(err);
      }
      if (end < 0) return -1;
      target[offset] = 0;
      target.writeUInt32BE(schemaId, offset + 1);
      return end;
    },
  };
}
