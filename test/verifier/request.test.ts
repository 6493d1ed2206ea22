import { describe, expect, it } from 'vitest';
import { completed, failed, toJson } from '../../src/verifier/reply.ts';
import {
  correlationIdOf,
  deadlineOf,
  formatOf,
  isLegalTopicName,
  MAX_CORRELATION_ID_BYTES,
  MAX_HEADER_VALUE_BYTES,
  MAX_HEADERS_BYTES,
  MAX_KEY_BYTES,
  MAX_PARTY_NAME_INPUT,
  MAX_REQUEST_ID_BYTES,
  parseJsonRequest,
  recordLimitRefusal,
  replyRouteOf,
  replyTopicRefusal,
  validateRequest,
} from '../../src/verifier/request.ts';
import { replyPartitionHeader } from './harness.ts';

const valid = {
  requestId: 'r-1',
  iban: 'de89 3704 0044 0532 0130 00',
  partyName: ' Anna Schmidt ',
  requestedAt: 1000,
};
const allow = /^vop\.verification\.replies\..*/;
const rules = (allowed: RegExp = allow, own: string[] = []) => ({
  defaultTopic: 'vop.verification.replies.v1',
  allowed,
  own,
});
/** 𠮷: one character, two UTF-16 units. */
const ASTRAL = '\u{20BB7}';

describe('request validation', () => {
  it('accepts a valid request and normalises its IBAN and name', () => {
    expect(validateRequest(valid)).toEqual({
      ok: true,
      request: {
        requestId: 'r-1',
        iban: 'DE89370400440532013000',
        partyName: 'Anna Schmidt',
        requestedAt: 1000,
      },
    });
  });

  it('reads requestedAt as epoch ms or ISO-8601 in JSON requests', () => {
    const parsed = parseJsonRequest(
      Buffer.from(JSON.stringify({ ...valid, requestedAt: '1970-01-01T00:00:01Z' })),
    );
    expect(parsed.ok && parsed.request.requestedAt).toBe(1000);
  });

  it.each([
    ['a bad IBAN checksum', { iban: 'DE88370400440532013000' }, 'REQUEST_IBAN_INVALID'],
    ['an empty name', { partyName: '   ' }, 'REQUEST_NAME_INVALID'],
    ['a name over 140 characters', { partyName: 'x'.repeat(141) }, 'REQUEST_NAME_TOO_LONG'],
    ['a missing request id', { requestId: '' }, 'REQUEST_ID_MISSING'],
    ['a requestedAt that is no instant', { requestedAt: 'now' }, 'REQUEST_REQUESTED_AT_INVALID'],
  ])('refuses %s', (_what, change, code) => {
    expect(validateRequest({ ...valid, ...change })).toMatchObject({ ok: false, code });
  });

  it.each([
    [
      'a request id over the limit',
      { requestId: 'r'.repeat(MAX_REQUEST_ID_BYTES + 1) },
      'REQUEST_ID_TOO_LONG',
    ],
    ['a request id over the limit in UTF-8 bytes', { requestId: 'é'.repeat(129) }, 'REQUEST_ID_TOO_LONG'],
    ['a 100-character IBAN', { iban: `DE89${'0'.repeat(96)}` }, 'REQUEST_IBAN_TOO_LONG'],
    [
      'an IBAN of 35 characters once spaces are removed',
      { iban: `DE89 ${'0'.repeat(31)}` },
      'REQUEST_IBAN_TOO_LONG',
    ],
    ['an IBAN of megabytes of spaces', { iban: ' '.repeat(1_000_000) }, 'REQUEST_IBAN_TOO_LONG'],
    ['a 1 MB name', { partyName: 'x'.repeat(1_000_000) }, 'REQUEST_NAME_TOO_LONG'],
    [
      'a name of spaces longer than the input limit',
      { partyName: ' '.repeat(MAX_PARTY_NAME_INPUT + 1) },
      'REQUEST_NAME_TOO_LONG',
    ],
    // Sizes come first: a request over a limit is refused for that, whatever else is wrong with it.
    ['an over-long IBAN with no name', { iban: 'D'.repeat(200), partyName: '' }, 'REQUEST_IBAN_TOO_LONG'],
  ])('refuses before any other check %s', (_what, change, code) => {
    expect(validateRequest({ ...valid, ...change })).toMatchObject({ ok: false, code });
  });

  it('passes an IBAN of 34 characters with a space after each, in the print form', () => {
    // GB82 WEST 1234 5698 7654 32, spaced out: refused for its checksum or shape only, not its size.
    expect(validateRequest({ ...valid, iban: 'GB82WEST12345698765432'.split('').join(' ') })).toMatchObject({
      ok: true,
    });
  });

  it.each([
    ['passes 140 astral characters (280 UTF-16 units)', ASTRAL.repeat(140), true],
    ['passes 139 characters with spaces around them', `  ${'x'.repeat(139)}   `, true],
    ['passes 140 characters and a trailing space', `${'é'.repeat(140)} `, true],
    ['refuses 141 astral characters', ASTRAL.repeat(141), false],
    ['refuses 140 characters and an astral one', `${'x'.repeat(140)}${ASTRAL}`, false],
  ])('counts a name in code points after trimming: %s', (_what, partyName, ok) => {
    expect(validateRequest({ ...valid, partyName }).ok).toBe(ok);
  });

  it('marks a value that is not JSON as unreadable', () => {
    expect(parseJsonRequest(Buffer.from('{oops'))).toMatchObject({
      ok: false,
      code: 'REQUEST_UNREADABLE',
      unreadable: true,
    });
    expect(parseJsonRequest(Buffer.from('[1]'))).toMatchObject({ code: 'REQUEST_UNREADABLE' });
  });
});

describe('request limits on the key and headers', () => {
  const ok = Buffer.from('r-1');
  it.each([
    ['a key over the limit', Buffer.alloc(MAX_KEY_BYTES + 1, 'k'), {}, 'REQUEST_KEY_TOO_LONG'],
    [
      'a 400 KB correlation id',
      ok,
      { kafka_correlationId: Buffer.alloc(400_000, 'c') },
      'REQUEST_CORRELATION_ID_TOO_LONG',
    ],
    [
      'a correlation id one byte over',
      ok,
      { kafka_correlationId: Buffer.alloc(MAX_CORRELATION_ID_BYTES + 1) },
      'REQUEST_CORRELATION_ID_TOO_LONG',
    ],
    [
      'a vop-deadline over the header limit',
      ok,
      { 'vop-deadline': Buffer.alloc(MAX_HEADER_VALUE_BYTES + 1, '1') },
      'REQUEST_HEADER_TOO_LARGE',
    ],
    [
      'a 300 KB reply topic',
      ok,
      { kafka_replyTopic: Buffer.alloc(300_000, 'a') },
      'REQUEST_HEADER_TOO_LARGE',
    ],
    [
      'headers each within the limit, over it together',
      ok,
      Object.fromEntries(
        Array.from({ length: MAX_HEADERS_BYTES / MAX_HEADER_VALUE_BYTES + 1 }, (_, i) => [
          `h${i}`,
          Buffer.alloc(MAX_HEADER_VALUE_BYTES),
        ]),
      ),
      'REQUEST_HEADER_TOO_LARGE',
    ],
  ])('refuses %s', (_what, key, headers, code) => {
    expect(recordLimitRefusal(key, headers)).toMatchObject({ code });
  });

  it('passes a record at every limit, and one without a key', () => {
    expect(
      recordLimitRefusal(Buffer.alloc(MAX_KEY_BYTES), {
        kafka_correlationId: Buffer.alloc(MAX_CORRELATION_ID_BYTES),
        kafka_replyTopic: Buffer.alloc(MAX_HEADER_VALUE_BYTES),
      }),
    ).toBeUndefined();
    expect(recordLimitRefusal(null, {})).toBeUndefined();
  });

  it('echoes a correlation id over the limit nowhere: the reply carries the request id instead', () => {
    expect(correlationIdOf({ kafka_correlationId: Buffer.alloc(400_000) }, 'r-1')?.toString()).toBe('r-1');
  });
});

describe('reply topic checks', () => {
  const own = ['vop.verification.requests.v1', 'fraud.alerts.v1'];
  const broad = /^(?:.*)$/;
  it.each([
    ['vop.verification.replies.x y', 'not a legal Kafka topic name'],
    ['vop.verification.replies.x\n', 'not a legal Kafka topic name'],
    [`vop.verification.replies.${'x'.repeat(300)}`, 'not a legal Kafka topic name'],
    ['.', 'not a legal Kafka topic name'],
    ['..', 'not a legal Kafka topic name'],
    ['__consumer_offsets', 'an internal topic'],
    ['__transaction_state', 'an internal topic'],
    ['fraud.alerts.v1', "one of fraudlink's own topics"],
    ['vop.verification.requests.v1', "one of fraudlink's own topics"],
  ])('refuses %j even under an allow-list that takes anything', (topic, why) => {
    expect(
      replyTopicRefusal(topic, { defaultTopic: 'vop.verification.replies.v1', allowed: broad, own }),
    ).toBe(why);
  });

  it('takes a legal name the allow-list matches, and the default topic whatever the list says', () => {
    const rules = { defaultTopic: 'vop.verification.replies.v1', allowed: /^(?:vop\..*)$/, own };
    expect(replyTopicRefusal('vop.verification.replies.team-a', rules)).toBeUndefined();
    expect(
      replyTopicRefusal('vop.verification.replies.v1', { ...rules, allowed: /^(?:none)$/ }),
    ).toBeUndefined();
    expect(replyTopicRefusal('team.replies', rules)).toBe('not matched in full by VERIFY_REPLY_TOPICS');
    expect(isLegalTopicName('a'.repeat(249))).toBe(true);
    expect(isLegalTopicName('a'.repeat(250))).toBe(false);
  });

  it('routes a refused topic to the default one, its name cut for the log line', () => {
    const route = replyRouteOf(
      { kafka_replyTopic: Buffer.alloc(300_000, 'a'), kafka_replyPartition: replyPartitionHeader(1) },
      { defaultTopic: 'replies', allowed: broad, own },
    );
    expect(route).toEqual({
      topic: 'replies',
      refusedTopic: expect.stringMatching(/^a{128}…\(\d+ more\)$/),
      refusedBecause: 'not a legal Kafka topic name',
    });
  });
});

describe('request headers', () => {
  it('takes JSON only when content-type says so', () => {
    expect(formatOf({ 'content-type': Buffer.from('application/json; charset=utf-8') })).toBe('json');
    expect(formatOf({})).toBe('avro');
  });

  it('reads vop-deadline as decimal text or an 8-byte long, else requestedAt plus the default', () => {
    expect(deadlineOf({ 'vop-deadline': Buffer.from('12345') }, 0, 5000)).toBe(12345);
    const long = Buffer.alloc(8);
    long.writeBigInt64BE(98765n);
    expect(deadlineOf({ 'vop-deadline': long }, 0, 5000)).toBe(98765);
    expect(deadlineOf({}, 1000, 5000)).toBe(6000);
  });

  it('reads a vop-deadline that is neither as invalid (null), not as absent', () => {
    for (const text of ['2026-11-23T10:00:00Z', '1e13', '-5', '', '12.5']) {
      expect(deadlineOf({ 'vop-deadline': Buffer.from(text) }, 1000, 5000), text).toBeNull();
    }
    expect(deadlineOf({ 'vop-deadline': Buffer.from([1, 2, 3]) }, 1000, 5000)).toBeNull();
  });

  it('flags a kafka_replyPartition that is not 4 bytes (the text "3", say) instead of dropping it unremarked', () => {
    expect(replyRouteOf({ kafka_replyPartition: Buffer.from('3') }, rules())).toEqual({
      topic: 'vop.verification.replies.v1',
      unreadablePartition: 1,
    });
  });

  it('routes to an allowed kafka_replyTopic and partition', () => {
    expect(
      replyRouteOf(
        {
          kafka_replyTopic: Buffer.from('vop.verification.replies.team-a'),
          kafka_replyPartition: replyPartitionHeader(2),
        },
        rules(),
      ),
    ).toEqual({ topic: 'vop.verification.replies.team-a', partition: 2 });
  });

  it('falls back to the default reply topic when the allow-list refuses the asked one', () => {
    expect(replyRouteOf({ kafka_replyTopic: Buffer.from('payments.internal') }, rules())).toEqual({
      topic: 'vop.verification.replies.v1',
      refusedTopic: 'payments.internal',
      refusedBecause: 'not matched in full by VERIFY_REPLY_TOPICS',
    });
  });

  it('refuses its own requests or DLQ topic as a reply topic even when the allow-list admits it', () => {
    for (const own of ['vop.verification.requests.v1', 'vop.verification.requests.dlq.v1']) {
      expect(
        replyRouteOf(
          { kafka_replyTopic: Buffer.from(own), kafka_replyPartition: replyPartitionHeader(0) },
          rules(/.*/, ['vop.verification.requests.v1', 'vop.verification.requests.dlq.v1']),
        ),
      ).toEqual({
        topic: 'vop.verification.replies.v1',
        refusedTopic: own,
        refusedBecause: "one of fraudlink's own topics",
      });
    }
  });

  it('takes the default reply topic and its partition even when the allow-list does not name it', () => {
    expect(
      replyRouteOf(
        {
          kafka_replyTopic: Buffer.from('vop.verification.replies.v1'),
          kafka_replyPartition: replyPartitionHeader(1),
        },
        rules(/^team\./),
      ),
    ).toEqual({ topic: 'vop.verification.replies.v1', partition: 1 });
  });

  it('echoes a binary correlation id byte for byte, defaulting to the request id', () => {
    const uuidBytes = Buffer.from('0f1e2d3c4b5a69788796a5b4c3d2e1f0', 'hex');
    expect(correlationIdOf({ kafka_correlationId: uuidBytes }, 'r-1')).toBe(uuidBytes);
    expect(correlationIdOf({}, 'r-1')?.toString()).toBe('r-1');
    expect(correlationIdOf({}, null)).toBeNull();
  });
});

describe('replies', () => {
  it('keeps matchedName only with CMTC', () => {
    expect(completed('r', { partyNameMatch: 'MTCH', matchedName: 'x' }, 5, 3).matchedName).toBeNull();
    expect(completed('r', { partyNameMatch: 'CMTC', matchedName: 'Anna Schmidt' }, 5, 3).matchedName).toBe(
      'Anna Schmidt',
    );
  });

  it('writes JSON with Avro field names, plain unions and epoch-ms instants', () => {
    const json = JSON.parse(
      toJson(failed('r', 'EXPIRED', { code: 'DEADLINE_PASSED', message: 'late' }, 7)).toString(),
    );
    expect(json).toEqual({
      requestId: 'r',
      outcome: 'EXPIRED',
      nameMatch: null,
      matchedName: null,
      error: { code: 'DEADLINE_PASSED', message: 'late' },
      respondedAt: 7,
      upstreamLatencyMs: null,
    });
  });
});
