import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONNECTOR_HEAP_GROWING_PERCENT } from '../../src/connector/heap.ts';

const heapModule = fileURLToPath(new URL('../../src/connector/heap.ts', import.meta.url));

/** boundHeapGrowth() in a node process of its own (it sets a process-wide V8 flag), started with `flags`. */
function boundIn(flags: string[]): string {
  const script = `const { boundHeapGrowth } = await import(${JSON.stringify(heapModule)}); console.log(String(boundHeapGrowth()));`;
  return execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script], {
    encoding: 'utf8',
  }).trim();
}

describe('the connector heap growth bound', () => {
  it('sets V8 heap growth for the process when node was started without one', () => {
    expect(boundIn([])).toBe(String(CONNECTOR_HEAP_GROWING_PERCENT));
  });

  it('keeps a heap growth given on the command line, in either spelling', () => {
    expect(boundIn(['--heap-growing-percent=50'])).toBe('undefined');
    expect(boundIn(['--heap_growing_percent=50'])).toBe('undefined');
  });
});
