import { beforeAll, describe, expect, it } from 'vitest';
import { holderNameFor, matchName, type Sandbox } from '../../src/sandbox/index.ts';
import { call, startSandbox } from './helpers.ts';

let sandbox: Sandbox;
const verify = (body: unknown) => call(sandbox.url, '/vop/v1/verify', { key: 'sandbox-key', body });

beforeAll(async () => {
  sandbox = await startSandbox({ alerts: 200 });
});

/** A seeded IBAN the scheme reaches, whose holder has (or has not) a middle name. */
function reachable(middleName: boolean): string {
  const row = sandbox
    .currentRows()
    .find(
      (r) =>
        /^(DE|AT|NL|BE)/.test(r.iban) && (sandbox.holderName(r.iban).split(' ').length === 3) === middleName,
    );
  if (!row) throw new Error('no such IBAN in the seeded data');
  return row.iban;
}

describe('verify', () => {
  it('answers MTCH for the holder name, ignoring case, accents and extra spaces', async () => {
    const iban = reachable(false);
    const holder = sandbox.holderName(iban);
    for (const name of [
      holder,
      `  ${holder.toUpperCase()} `,
      holder.normalize('NFD').replace(/\p{Diacritic}/gu, ''),
    ]) {
      const answer = await verify({ iban, party: { name } });
      expect(answer).toMatchObject({ status: 200, body: { partyNameMatch: 'MTCH' } });
      expect(answer.body).not.toHaveProperty('matchedName');
    }
  });

  it('answers CMTC with the holder name for words in another order, a missing middle name or a typo', async () => {
    const plain = reachable(false);
    const middle = reachable(true);
    const [first, mid, last] = sandbox.holderName(middle).split(' ') as [string, string, string];
    const holder = sandbox.holderName(plain);
    const cases: [string, string][] = [
      [plain, holder.split(' ').reverse().join(' ')],
      [middle, `${first} ${last}`],
      [middle, `${first} ${mid}x ${last}`],
      [plain, `${holder.slice(0, -1)}`],
    ];
    for (const [iban, name] of cases) {
      const answer = await verify({ iban, party: { name } });
      expect(answer.body).toEqual({ partyNameMatch: 'CMTC', matchedName: sandbox.holderName(iban) });
    }
  });

  it('answers NMTC for another name', async () => {
    const answer = await verify({ iban: reachable(false), party: { name: 'Zzyzx Qwerty' } });
    expect(answer.body).toEqual({ partyNameMatch: 'NMTC' });
  });

  it('answers NOAP for an IBAN outside the reachable countries, whatever the name', async () => {
    const iban = 'GB82WEST12345698765432';
    const answer = await verify({ iban, party: { name: sandbox.holderName(iban) } });
    expect(answer.body).toEqual({ partyNameMatch: 'NOAP' });
  });

  it('gives IBANs the data never mentions a holder name too, derived from the IBAN', async () => {
    const iban = 'DE89370400440532013000';
    expect(sandbox.holderName(iban)).toBe(holderNameFor('de89 3704 0044 0532 0130 00'));
    const answer = await verify({ iban, party: { name: sandbox.holderName(iban) } });
    expect(answer.body).toEqual({ partyNameMatch: 'MTCH' });
  });

  const bad: [string, string | unknown][] = [
    ['a body that is not JSON', '{"iban":'],
    ['a missing party', { iban: 'DE89370400440532013000' }],
    ['an empty name', { iban: 'DE89370400440532013000', party: { name: ' ' } }],
    ['a name that is not a string', { iban: 'DE89370400440532013000', party: { name: 7 } }],
    ['a missing iban', { party: { name: 'Anna Weber' } }],
    ['an IBAN with a bad checksum', { iban: 'DE88370400440532013000', party: { name: 'Anna Weber' } }],
  ];
  for (const [what, body] of bad) {
    it(`answers 400 with a JSON error for ${what}`, async () => {
      const answer =
        typeof body === 'string'
          ? await call(sandbox.url, '/vop/v1/verify', { key: 'sandbox-key', raw: body })
          : await verify(body);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ code: expect.any(String), message: expect.any(String) });
    });
  }
});

describe('the name rule', () => {
  it('allows at most two edits for a close match', () => {
    const iban = 'DE89370400440532013000';
    expect(matchName(iban, 'Anna Webr', 'Anna Weber')).toEqual({
      partyNameMatch: 'CMTC',
      matchedName: 'Anna Weber',
    });
    expect(matchName(iban, 'Ana Webr', 'Anna Weber').partyNameMatch).toBe('CMTC');
    expect(matchName(iban, 'An Web', 'Anna Weber').partyNameMatch).toBe('NMTC');
    expect(matchName(iban, "jurgen o'brien", "Jürgen O'Brien").partyNameMatch).toBe('MTCH');
  });
});
