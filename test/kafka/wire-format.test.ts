import { describe, expect, it } from 'vitest';
import { DecodeError } from '../../src/errors.ts';
import { frame, HEADER_SIZE, MAGIC_BYTE, unframe, writeHeader } from '../../src/kafka/wire-format.ts';

describe('Confluent wire format', () => {
  it('frames a body behind the magic byte and the big-endian schema id', () => {
    const framed = frame(0x01020304, Buffer.from([0xaa, 0xbb]));
    expect([...framed]).toEqual([MAGIC_BYTE, 1, 2, 3, 4, 0xaa, 0xbb]);
    expect(framed.length).toBe(HEADER_SIZE + 2);
  });

  it('unframes what it framed, the body as a view of the same bytes', () => {
    const framed = frame(42, Buffer.from('body'));
    const { schemaId, body } = unframe(framed);
    expect(schemaId).toBe(42);
    expect(body.toString()).toBe('body');
    expect(body.buffer).toBe(framed.buffer);
  });

  it('reads schema ids above 2^31 as unsigned', () => {
    expect(unframe(frame(0xffff_fffe, Buffer.alloc(0))).schemaId).toBe(0xffff_fffe);
  });

  it('accepts an empty body (a record with no fields)', () => {
    expect(unframe(Buffer.from([0, 0, 0, 0, 7])).body.length).toBe(0);
  });

  it('refuses a value whose first byte is not the magic byte, naming the byte', () => {
    const attempt = () => unframe(Buffer.from([1, 0, 0, 0, 1, 2]));
    expect(attempt).toThrow(DecodeError);
    expect(attempt).toThrow('value starts with byte 1, not the wire-format magic byte 0');
  });

  it('refuses a value shorter than the header, naming its length', () => {
    expect(() => unframe(Buffer.from([0, 0, 0]))).toThrow(
      'value has 3 byte(s), fewer than the 5-byte wire-format header',
    );
    expect(() => unframe(Buffer.alloc(0))).toThrow(DecodeError);
  });

  it('refuses a null value as a tombstone', () => {
    expect(() => unframe(null)).toThrow(/tombstone/);
  });

  it('writes the header in place without touching the bytes after it', () => {
    const target = Buffer.from([9, 9, 9, 9, 9, 7]);
    writeHeader(target, 258);
    expect([...target]).toEqual([0, 0, 0, 1, 2, 7]);
  });

  it('refuses a schema id that does not fit four unsigned bytes', () => {
    expect(() => frame(-1, Buffer.alloc(0))).toThrow(RangeError);
    expect(() => frame(2 ** 32, Buffer.alloc(0))).toThrow(RangeError);
    expect(() => frame(1.5, Buffer.alloc(0))).toThrow(RangeError);
  });
});
