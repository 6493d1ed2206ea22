import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidInputError } from '../../src/errors.ts';
import { decodeCursor, encodeCursor } from '../../src/table/cursor.ts';
import { openAlertStore } from '../../src/table/store.ts';
import { alertState } from './alerts.ts';

async function storePath(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'fraudlink-store-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'table.db');
}

const alert = alertState;
const upsert = (iban: string, n: number) => ({ type: 'AlertUpserted' as const, iban, alert: alert(iban, n) });
const removal = (iban: string) => ({ type: 'Tombstone' as const, iban, alert: null });

describe('the alert store', () => {
  it('keeps rows, offsets and the update time across a reopen, and counts rows as they come and go', async () => {
    const path = await storePath();
    const store = openAlertStore(path);
    expect(store.origin()).toBeUndefined();
    store.setOrigin({ topic: 't', clusterId: 'c' });
    store.apply(
      { offsets: new Map([[0, 3n]]), events: [upsert('A', 1), upsert('B', 1), upsert('A', 2)] },
      5000,
    );
    store.apply({ offsets: new Map([[1, 2n]]), events: [removal('B'), removal('nothing')] }, 6000);
    store.commit();
    expect(store.rows()).toBe(1);
    store.close();

    const reopened = openAlertStore(path);
    onTestFinished(() => reopened.close());
    expect(reopened.origin()).toEqual({ topic: 't', clusterId: 'c' });
    expect(reopened.offsets()).toEqual(
      new Map([
        [0, 3n],
        [1, 2n],
      ]),
    );
    expect(reopened.get('A')).toEqual(alert('A', 2));
    expect(reopened.get('B')).toBeUndefined();
    expect(reopened.rows()).toBe(1);
    expect(reopened.updatedAt()).toBe(6000);
  });

  it('never holds half a step: a step that fails leaves its rows and its offset as they were', async () => {
    const store = openAlertStore(await storePath());
    onTestFinished(() => store.close());
    store.apply({ offsets: new Map([[0, 1n]]), events: [upsert('A', 1)] }, 1);
    store.commit();
    const broken = {
      ...upsert('C', 9),
      alert: { ...alert('C', 9), qualification: null as unknown as string },
    };
    expect(() => store.apply({ offsets: new Map([[0, 5n]]), events: [upsert('B', 2), broken] }, 2)).toThrow();
    expect(store.offsets().get(0)).toBe(1n);
    expect(store.get('B')).toBeUndefined();
    expect(store.rows()).toBe(1);
    expect(store.updatedAt()).toBe(1);
  });

  it('creates the folder of a new store', async () => {
    const path = join(await storePath(), '..', 'volume', 'tables', 'table.db');
    const store = openAlertStore(path);
    onTestFinished(() => store.close());
    expect(store.rows()).toBe(0);
  });

  it('shows lookups the committed steps only, however many are written meanwhile', async () => {
    const store = openAlertStore(await storePath());
    onTestFinished(() => store.close());
    store.apply({ offsets: new Map([[0, 1n]]), events: [upsert('A', 1)] }, 1);
    store.commit();
    store.apply({ offsets: new Map([[0, 2n]]), events: [upsert('A', 2), upsert('B', 2)] }, 2);
    store.apply({ offsets: new Map([[1, 1n]]), events: [removal('A')] }, 3);
    expect(store.get('A')).toEqual(alert('A', 1));
    expect(store.get('B')).toBeUndefined();
    expect(store.page({ limit: 10 }).alerts.map((a) => a.iban)).toEqual(['A']);
    expect([store.rows(), store.updatedAt()]).toEqual([1, 1]);
    store.commit();
    expect(store.get('A')).toBeUndefined();
    expect(store.get('B')).toEqual(alert('B', 2));
    expect([store.rows(), store.updatedAt()]).toEqual([1, 3]);
  });

  it('shows each commit to the lookups that follow it, with lookups between commits', async () => {
    const store = openAlertStore(await storePath());
    onTestFinished(() => store.close());
    for (let n = 1; n <= 3; n++) {
      store.apply({ offsets: new Map([[0, BigInt(n)]]), events: [upsert('A', n), upsert(`K${n}`, n)] }, n);
      expect(store.get('A')).toEqual(n === 1 ? undefined : alert('A', n - 1));
      store.commit();
      expect(store.get('A')).toEqual(alert('A', n));
      expect(store.page({ limit: 10 }).alerts.map((a) => a.iban)).toEqual([
        'A',
        ...Array.from({ length: n }, (_, i) => `K${i + 1}`),
      ]);
    }
  });

  it('empties a store of another layout version', async () => {
    const path = await storePath();
    const store = openAlertStore(path);
    store.apply({ offsets: new Map([[0, 1n]]), events: [upsert('A', 1)] }, 1);
    store.close();
    const db = new DatabaseSync(path);
    db.prepare("UPDATE meta SET value = 'old' WHERE key = 'version'").run();
    db.close();
    const reopened = openAlertStore(path);
    onTestFinished(() => reopened.close());
    expect(reopened.rows()).toBe(0);
    expect(reopened.offsets().size).toBe(0);
  });

  it('pages in IBAN order after a key, with filters', async () => {
    const store = openAlertStore(await storePath());
    onTestFinished(() => store.close());
    store.apply({ offsets: new Map([[0, 4n]]), events: ['D', 'B', 'A', 'C'].map((k, n) => upsert(k, n)) }, 1);
    store.commit();
    expect(store.page({ limit: 2 })).toMatchObject({ lastIban: 'B' });
    expect(store.page({ limit: 2, after: 'B' }).alerts.map((a) => a.iban)).toEqual(['C', 'D']);
    expect(store.page({ limit: 2, after: 'B' }).lastIban).toBeUndefined();
    expect(store.page({ limit: 10, updatedAfter: 1001 }).alerts.map((a) => a.iban)).toEqual(['A', 'C']);
    expect(store.page({ limit: 10, qualification: 'PENDING' }).alerts).toEqual([]);
  });
});

describe('the paging cursor', () => {
  it('names the IBAN to continue after, and refuses anything it did not make', () => {
    expect(decodeCursor(encodeCursor('DE89370400440532013000'))).toBe('DE89370400440532013000');
    for (const bad of ['', 'abc', Buffer.from('{"after":1}').toString('base64url'), 'x'.repeat(300)]) {
      expect(() => decodeCursor(bad), bad).toThrow(InvalidInputError);
    }
  });
});
