import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { VerifierSkipConfig } from '../../src/config/index.ts';
import type { IncomingRecord } from '../../src/kafka/index.ts';
import { checkNamed, dlqCopy, offsetAfter } from '../../src/verifier/skip.ts';

const config: VerifierSkipConfig = {
  logLevel: 'info',
  kafka: { brokers: ['localhost:9092'], clientId: 'test', ssl: false },
  requestsTopic: 'requests',
  dlqTopic: 'requests.dlq',
  groupId: 'group',
};
const request = { partition: 3, offset: '7', reason: 'stuck' };
const batch = {
  firstOffset: '5',
  lastOffset: '9',
  codec: 'zstd',
  reason: 'decompresses past the bound',
  bytes: 3,
  data: Buffer.from([1, 2, 3]),
};
const recordAt = (offset: string): IncomingRecord => ({
  topic: 'requests',
  partition: 3,
  offset,
  key: Buffer.from('r-1'),
  value: Buffer.from('{}'),
  headers: {
    'content-type': Buffer.from('application/json'),
    'error-code': Buffer.from('theirs'),
    gone: undefined,
  },
  timestamp: 0,
});

describe('checkNamed: only the record the group reads next is skipped', () => {
  it('takes the record at the named offset when it is the next one', () => {
    const record = recordAt('7');
    expect(checkNamed({ kind: 'record', record }, 5n, request, 'requests')).toEqual({
      kind: 'record',
      record,
    });
  });

  it('refuses a named offset behind which the group still has a record, naming that record', () => {
    expect(() => checkNamed({ kind: 'record', record: recordAt('6') }, 6n, request, 'requests')).toThrow(
      /next record on requests partition 3 is a record at offset 6, before 7/,
    );
  });

  it('refuses an offset that holds no record (a marker, an aborted record) or lies past the end', () => {
    expect(() => checkNamed({ kind: 'record', record: recordAt('9') }, 7n, request, 'requests')).toThrow(
      /offset 7 of requests partition 3 holds no record.*next record is at offset 9/,
    );
    expect(() => checkNamed({ kind: 'end', end: '7' }, 7n, request, 'requests')).toThrow(
      /no record at offset 7/,
    );
  });

  it('takes an unreadable batch named by any of its offsets, and moves past all of it', () => {
    const record = { ...recordAt('9'), unreadableBatch: batch };
    const target = checkNamed({ kind: 'record', record }, 5n, request, 'requests');
    expect(target).toEqual({ kind: 'batch', batch });
    expect(offsetAfter(target, request)).toBe('10');
    expect(() =>
      checkNamed(
        { kind: 'record', record: { ...recordAt('6'), unreadableBatch: { ...batch, lastOffset: '6' } } },
        5n,
        request,
        'requests',
      ),
    ).toThrow(/next record on requests partition 3 is an unreadable batch at offsets 5 to 6, before 7/);
  });

  it("skips an unreadable record only at the group's exact position", () => {
    expect(checkNamed({ kind: 'unreadable', reason: 'bad zstd frame' }, 7n, request, 'requests')).toEqual({
      kind: 'unreadable',
      reason: 'bad zstd frame',
    });
    expect(() =>
      checkNamed({ kind: 'unreadable', reason: 'bad zstd frame' }, 6n, request, 'requests'),
    ).toThrow(/group's position \(offset 6 of requests partition 3\) cannot be read \(bad zstd frame\)/);
  });
});

describe('dlqCopy', () => {
  it("keeps the record's key, value and headers, its own headers replacing same-named ones", () => {
    const copy = dlqCopy(
      { kind: 'record', record: recordAt('7') },
      config,
      request,
      Date.parse('2026-11-28T14:00:00Z'),
    );
    expect(copy.topic).toBe('requests.dlq');
    expect(copy.key?.toString()).toBe('r-1');
    expect(copy.value?.toString()).toBe('{}');
    expect(Object.fromEntries(Object.entries(copy.headers ?? {}).map(([k, v]) => [k, v.toString()]))).toEqual(
      {
        'content-type': 'application/json',
        'error-code': 'OPERATOR_SKIPPED',
        'error-message': 'stuck',
        'source-topic': 'requests',
        'source-partition': '3',
        'source-offset': '7',
        'observed-at': '2026-11-28T14:00:00.000Z',
      },
    );
  });

  it('is an empty value with a header naming why when the record could not be read', () => {
    const copy = dlqCopy({ kind: 'unreadable', reason: 'bad zstd frame' }, config, request, 0);
    expect(copy.key).toBeNull();
    expect(copy.value).toHaveLength(0);
    expect(copy.headers).toMatchObject({ 'source-unreadable': 'bad zstd frame', 'source-offset': '7' });
    expect(offsetAfter({ kind: 'unreadable', reason: 'x' }, request)).toBe('8');
  });

  it("is an unreadable batch's compressed records, with its offsets, codec and why it cannot be read", () => {
    const copy = dlqCopy({ kind: 'batch', batch }, config, request, 0);
    expect(copy.key).toBeNull();
    expect(copy.value).toBe(batch.data);
    expect(copy.headers).toMatchObject({
      'error-code': 'OPERATOR_SKIPPED',
      'source-offset-first': '5',
      'source-offset-last': '9',
      'source-codec': 'zstd',
      'source-unreadable': 'decompresses past the bound',
    });
  });
});

describe('fraudlink verifier skip arguments', () => {
  const run = async (...args: string[]) => {
    const stderr = new PassThrough();
    let text = '';
    stderr.on('data', (d: Buffer) => (text += d.toString()));
    const code = await main(['node', 'fraudlink', 'verifier', 'skip', ...args], {
      env: {},
      stdout: new PassThrough(),
      stderr,
    });
    return { code, text };
  };

  it('exits 2 naming a partition or offset that is not a number, or a missing one', async () => {
    expect(await run('--partition', 'one', '--offset', '1')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/"one" is not a partition number/),
    });
    expect(await run('--partition', '1', '--offset', '-1')).toMatchObject({ code: 2 });
    expect(await run('--partition', '1', '--offset', '9223372036854775808')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/not a record offset/),
    });
    expect(await run('--partition', '1')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/--offset/),
    });
  });
});
