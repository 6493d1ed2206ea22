import { describe, expect, it } from 'vitest';
import { CONNECTOR_HEAP_GROWING_PERCENT } from '../../src/connector/heap.ts';
import { asPid1, launch } from './launch.ts';

describe(`bin/fraudlink.js (${asPid1 ? 'as PID 1 in a new pid namespace' : 'unshare unavailable: as a child'})`, {
  timeout: 30_000,
}, () => {
  it('ends with 143 on a SIGTERM that arrives while the CLI is still loading (it was dropped as PID 1)', async () => {
    const cli = launch(['--help']);
    const holding = await cli.line('holding the CLI');
    if (asPid1) expect(holding.pid).toBe(1);
    process.kill(cli.nodePid(), 'SIGTERM');
    // The CLI stays held (stdin stays open): the keeper alone ends the process. A launcher without a
    // handler by then drops the signal and never exits: the test fails at its timeout. Letting the
    // CLI load here would race the signal, whose listener may run only after the help is printed.
    expect(await cli.exited).toBe(143);
    expect(cli.stdout()).toBe('');
  });

  it('hands SIGTERM over to the command once it runs: the sandbox stops cleanly with exit 0', async () => {
    const cli = launch(['sandbox', '--port', '0', '--alerts', '10']);
    cli.child.stdin.end();
    await cli.line('sandbox ready');
    process.kill(cli.nodePid(), 'SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(cli.stderr()).toContain('"signal":"SIGTERM","msg":"stopping"');
  });

  it("bounds the connector's and the table's V8 heap growth before the CLI loads, and no other command's", async () => {
    const run = async (args: string[]) => {
      const cli = launch(args);
      const { heapGrowingPercent } = await cli.line('holding the CLI');
      cli.child.stdin.end();
      expect(await cli.exited).toBe(0);
      return heapGrowingPercent;
    };
    expect(await run(['connector', '--help'])).toBe(CONNECTOR_HEAP_GROWING_PERCENT);
    expect(await run(['table', '--help'])).toBe(CONNECTOR_HEAP_GROWING_PERCENT);
    expect(await run(['sandbox', '--help'])).toBeUndefined();
  });
});
