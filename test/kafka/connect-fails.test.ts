import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/connect-fails.ts', import.meta.url));

it('closes the connection of a producer or admin client whose connect() failed, which the caller cannot close', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [fixture]);
  expect(JSON.parse(stdout)).toEqual({ failures: [], open: 0 });
}, 60_000);

// A stop request during start-up waited out kafkajs's connection retries: the clients took no signal.
it('disconnects at once an admin client, a transactional producer and a consumer whose connect was aborted', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [fixture, 'abort'], { timeout: 30_000 });
  expect(JSON.parse(stdout)).toEqual({ failures: [], open: 0 });
}, 60_000);
