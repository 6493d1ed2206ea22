import { describe, expect, it } from 'vitest';
import type { ExportRequest } from '../../src/connector/cursor.ts';
import { type PageSource, readAhead } from '../../src/connector/pages.ts';
import { type PreparedPage, preparePage } from '../../src/connector/prepare.ts';
import { AbortedError } from '../../src/errors.ts';
import { testEncoders } from './encoders.ts';

/** A source of empty pages chained by cursor ("1" → "2" → ... → null at `last`), recording each fetch. */
class ScriptedSource implements PageSource {
  fetched: string[] = [];
  aborted: string[] = [];
  gates = new Map<string, PromiseWithResolvers<void>>();
  readonly last: number;
  constructor(last: number) {
    this.last = last;
  }
  /** A fetch of `cursor` waits until release(cursor). */
  hold(cursor: string): void {
    this.gates.set(cursor, Promise.withResolvers<void>());
  }
  release(cursor: string): void {
    this.gates.get(cursor)?.resolve();
  }
  async next(request: ExportRequest, signal: AbortSignal): Promise<PreparedPage> {
    const at = request.cursor ?? '0';
    this.fetched.push(at);
    const aborted = Promise.withResolvers<void>();
    signal.addEventListener(
      'abort',
      () => {
        this.aborted.push(at);
        aborted.resolve();
      },
      { once: true },
    );
    await Promise.race([this.gates.get(at)?.promise, aborted.promise]);
    if (signal.aborted) throw signal.reason;
    const n = Number(at) + 1;
    return preparePage([], n > this.last ? null : String(n), 0, testEncoders());
  }
  async close() {}
}

const settle = () => new Promise((r) => setImmediate(r));
const signal = () => new AbortController().signal;

describe('readAhead', () => {
  it('fetches up to `depth` pages past the one asked for, and serves them without fetching again', async () => {
    const source = new ScriptedSource(10);
    const pages = readAhead(source, 2);
    expect((await pages.next({}, signal())).nextCursor).toBe('1');
    await settle();
    expect(source.fetched).toEqual(['0', '1', '2']);
    expect((await pages.next({ cursor: '1' }, signal())).nextCursor).toBe('2');
    await settle();
    expect(source.fetched).toEqual(['0', '1', '2', '3']);
    expect((await pages.next({ cursor: '2' }, signal())).nextCursor).toBe('3');
    expect(source.aborted).toEqual([]);
  });

  it('reads nothing ahead of a caught-up page', async () => {
    const source = new ScriptedSource(1);
    const pages = readAhead(source, 3);
    await pages.next({}, signal());
    await settle();
    expect((await pages.next({ cursor: '1' }, signal())).nextCursor).toBeNull();
    await settle();
    expect(source.fetched).toEqual(['0', '1']);
  });

  // Regression: such a page was read ahead along its own cursor, up to `depth` times at once, and the
  // page served after the poll interval was one fetched before it.
  it('reads nothing ahead of an empty page handing back the cursor it answered (caught up, ask again)', async () => {
    const fetched: (string | undefined)[] = [];
    const source: PageSource = {
      async next(request) {
        fetched.push(request.cursor);
        return preparePage([], 'c1', 0, testEncoders());
      },
      async close() {},
    };
    const pages = readAhead(source, 3);
    await pages.next({}, signal());
    await settle();
    expect(fetched).toEqual([undefined, 'c1']);
    expect((await pages.next({ cursor: 'c1' }, signal())).nextCursor).toBe('c1');
    await settle();
    expect(fetched).toEqual([undefined, 'c1']);
  });

  it('drops and aborts what it read ahead when asked for another page', async () => {
    const source = new ScriptedSource(10);
    source.hold('2');
    const pages = readAhead(source, 2);
    await pages.next({}, signal());
    await settle();
    expect(source.fetched).toEqual(['0', '1', '2']);
    await pages.next({ updatedAfter: '2026-11-22T00:00:00.000Z' }, signal());
    expect(source.aborted).toEqual(['1', '2']);
    source.release('2');
    await settle();
    // The dropped page's late arrival does not restart reading ahead from it.
    expect(source.fetched.filter((c) => c === '3')).toEqual([]);
  });

  it('aborts the page asked for when the caller aborts', async () => {
    const source = new ScriptedSource(10);
    source.hold('0');
    const pages = readAhead(source, 2);
    const controller = new AbortController();
    const page = pages.next({}, controller.signal);
    controller.abort(new AbortedError('stopping'));
    await expect(page).rejects.toBeInstanceOf(AbortedError);
    expect(source.aborted).toEqual(['0']);
  });
});
