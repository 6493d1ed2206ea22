import { describe, expect, it } from 'vitest';
import { DLQ_TRUNCATED_HEADER, fitForDlq } from '../../src/connector/dlq.ts';
import { batchBytes, type OutgoingRecord } from '../../src/kafka/index.ts';

const copy = (key: string | null, valueBytes: number): OutgoingRecord => ({
  topic: 'dlq',
  key,
  value: Buffer.alloc(valueBytes, 0x61),
  headers: { 'error-code': 'ROW_TOO_LARGE', 'error-message': 'too large', source: 'export' },
});

describe('fitForDlq', () => {
  it('returns a record that fits as it is, without the header', () => {
    const record = copy('id-1', 1_000);
    expect(fitForDlq(record, batchBytes([record]))).toBe(record);
  });

  it('cuts the value to the topic limit and names the original size in dlq-truncated', () => {
    const record = copy('id-1', 5_000_000);
    const fitted = fitForDlq(record, 1_048_588);
    expect(batchBytes([fitted])).toBeLessThanOrEqual(1_048_588);
    expect(batchBytes([fitted])).toBeGreaterThan(1_048_588 - 16);
    expect(fitted.headers?.[DLQ_TRUNCATED_HEADER]).toBe(String(batchBytes([record])));
    expect(fitted.headers?.['error-code']).toBe('ROW_TOO_LARGE');
    expect(fitted.key?.toString()).toBe('id-1');
    expect(fitted.value?.equals((record.value as Buffer).subarray(0, fitted.value.length))).toBe(true);
  });

  it('cuts the key too when the key alone is larger than the topic takes, the value then empty', () => {
    const record = copy('k'.repeat(3_000), 3_000);
    const fitted = fitForDlq(record, 1_000);
    expect(batchBytes([fitted])).toBeLessThanOrEqual(1_000);
    expect(fitted.value).toHaveLength(0);
    expect(fitted.key?.toString()).toMatch(/^k+$/);
    expect(fitted.headers?.[DLQ_TRUNCATED_HEADER]).toBe(String(batchBytes([record])));
  });

  it('keeps a null key and value null', () => {
    const record: OutgoingRecord = {
      topic: 'dlq',
      key: null,
      value: null,
      headers: { big: 'h'.repeat(2_000) },
    };
    const fitted = fitForDlq(record, 1_000);
    expect(fitted.key).toBeNull();
    expect(fitted.value).toBeNull();
  });
});
