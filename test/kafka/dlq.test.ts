import { describe, expect, it } from 'vitest';
import { cutBytes, DLQ_CUT_BYTES, fitForDlq } from '../../src/kafka/dlq.ts';
import { batchBytes, type OutgoingRecord } from '../../src/kafka/index.ts';

const copy = (overrides: Partial<OutgoingRecord> = {}): OutgoingRecord => ({
  topic: 'dlq',
  key: 'req-1',
  value: Buffer.alloc(5_000, 'v'),
  headers: {
    'content-type': 'application/json',
    'error-code': 'REQUEST_UNREADABLE',
    'error-message': 'value is not JSON',
    'source-topic': 'requests',
    'source-partition': '0',
    'source-offset': '41',
  },
  ...overrides,
});

describe('fitForDlq', () => {
  it('returns a copy that fits as it is', () => {
    const record = copy();
    expect(fitForDlq(record, 10_000)).toBe(record);
  });

  it("cuts the value to what fits, keeps every header, and says the copy's size before", () => {
    const record = copy();
    const fitted = fitForDlq(record, 2_000);
    expect(batchBytes([fitted])).toBeLessThanOrEqual(2_000);
    expect(batchBytes([fitted])).toBeGreaterThan(1_950);
    expect(fitted.value?.equals(Buffer.alloc(fitted.value.length, 'v'))).toBe(true);
    expect(fitted.headers).toEqual({ ...record.headers, 'dlq-truncated': String(batchBytes([record])) });
    expect(fitted.key).toBe('req-1');
  });

  it("drops the value with value: 'drop'", () => {
    const fitted = fitForDlq(copy(), 2_000, { value: 'drop' });
    expect(fitted.value).toBeNull();
    expect(fitted.headers?.['dlq-truncated']).toBe(String(batchBytes([copy()])));
  });

  it('cuts the key and the headers the copy is not about before those it is about', () => {
    const record = copy({
      key: 'k'.repeat(3_000),
      headers: { ...copy().headers, kafka_replyTopic: 'r'.repeat(3_000) },
    });
    const fitted = fitForDlq(record, 2_000);
    expect(batchBytes([fitted])).toBeLessThanOrEqual(2_000);
    expect(fitted.key).toBe('k'.repeat(DLQ_CUT_BYTES));
    expect(fitted.headers?.kafka_replyTopic).toBe('r'.repeat(DLQ_CUT_BYTES));
    expect(fitted.headers?.['error-message']).toBe('value is not JSON');
  });

  it('leaves the other headers out, and cuts the kept ones, when cutting is not enough', () => {
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`h${i}`, 'x'.repeat(500)]));
    const record = copy({ headers: { ...many, ...copy().headers, 'error-message': 'm'.repeat(4_000) } });
    const fitted = fitForDlq(record, 2_000);
    expect(batchBytes([fitted])).toBeLessThanOrEqual(2_000);
    expect(Object.keys(fitted.headers ?? {}).filter((n) => n.startsWith('h'))).toEqual([]);
    expect(fitted.headers).toMatchObject({
      'error-code': 'REQUEST_UNREADABLE',
      'error-message': 'm'.repeat(DLQ_CUT_BYTES),
      'source-offset': '41',
      'dlq-truncated': String(batchBytes([record])),
    });
  });

  it('gives its smallest copy when even that does not fit, for the broker to refuse', () => {
    const fitted = fitForDlq(copy(), 100);
    expect(fitted.value).toBeNull();
    expect(fitted.headers?.['dlq-truncated']).toBeDefined();
  });
});

describe('cutBytes', () => {
  it('cuts a string at a character boundary, never past the bytes', () => {
    expect(cutBytes('aé€', 4)).toBe('aé');
    expect(cutBytes('aé€', 5)).toBe('aé');
    expect(cutBytes('aé€', 6)).toBe('aé€');
    expect(cutBytes('€€', 2)).toBe('');
    expect(cutBytes(Buffer.from('abcdef'), 3)).toEqual(Buffer.from('abc'));
  });
});
