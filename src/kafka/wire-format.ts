import { DecodeError } from '../errors.ts';

/** Confluent wire format: magic byte 0, 4-byte big-endian schema id, then the Avro body. */
export const MAGIC_BYTE = 0;
export const HEADER_SIZE = 5;

export function frame(schemaId: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(HEADER_SIZE + body.length);
  out[0] = MAGIC_BYTE;
  out.writeUInt32BE(schemaId, 1);
  body.copy(out, HEADER_SIZE);
  return out;
}

export function unframe(buffer: Buffer | null): { schemaId: number; body: Buffer } {
  if (buffer === null) throw new DecodeError('value is null (a tombstone), not an Avro record');
  if (buffer.length < HEADER_SIZE) {
    throw new DecodeError(`value has ${buffer.length} bytes, fewer than the 5-byte wire-format header`);
  }
  if (buffer[0] !== MAGIC_BYTE) {
    throw new DecodeError(`value starts with byte ${buffer[0]}, not the wire-format magic byte 0`);
  }
  return { schemaId: buffer.readUInt32BE(1), body: buffer.subarray(HEADER_SIZE) };
}
