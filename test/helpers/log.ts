import { Writable } from 'node:stream';

/** A destination for pino that keeps every JSON line written to it, parsed; `next()` waits for the next write. */
export function logCapture(): {
  stream: Writable;
  lines: Record<string, unknown>[];
  next(): Promise<void>;
} {
  const lines: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      for (const wake of waiters.splice(0)) wake();
      done();
    },
  });
  const next = () => new Promise<void>((resolve) => waiters.push(resolve));
  return { stream, lines, next };
}
