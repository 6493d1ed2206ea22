import { DecodeError } from '../errors.ts';

/**
 * Confluent wire format: magic byte 0, the schema id as a 4-byte big-endian unsigned int, then the
 * Avro body. Pure functions, no registry.
 */
export const MAGIC_BYTE = 0;
export const HEADER_SIZE = 5;
const MAX_SCHEMA_ID = 0xffff_ffff;

function checkSchemaId(schemaId: number): void {
  if (!Number.isInteger(schemaId) || schemaId < 0 || schemaId > MAX_SCHEMA_ID) {
    throw new RangeError(`schema id ${schemaId} does not fit the wire format's 4-byte unsigned field`);
  }
}

/** Writes the 5-byte header at the start of `target`, which must hold at least HEADER_SIZE bytes. */
export function writeHeader(target: Buffer, schemaId: number): void {
  checkSchemaId(schemaId);
  target[0] = MAGIC_BYTE;
  target.writeUInt32BE(schemaId, 1);
}

/** The header followed by a copy of `body`. */
export function frame(schemaId: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(HEADER_SIZE + body.length);
  writeHeader(out, schemaId);
  body.copy(out, HEADER_SIZE);
  return out;
}

/** Splits a value into its schema id and Avro body (a view, not a copy); DecodeError names what is wrong. */
export function unframe(buffer: Buffer | null): { schemaId: number; body: Buffer } {
  if (buffer === null) throw new DecodeError('value is null (a tombstone), not an Avro record');
  if (buffer.length < HEADER_SIZE) {
    throw new DecodeError(
      `value has ${buffer.length} byte(s), fewer than the ${HEADER_SIZE}-byte wire-format header`,
    );
  }
  if (buffer[0] !== MAGIC_BYTE) {
    throw new DecodeError(`value starts with byte ${buffer[0]}, not the wire-format magic byte 0`);
  }
  return { schemaId: buffer.readUInt32BE(1), body: buffer.subarray(HEADER_SIZE) };
}
