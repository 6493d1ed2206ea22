import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { main } from '../../src/cli/main.ts';

function capture() {
  let text = '';
  return {
    stream: { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream,
    text: () => text,
  };
}

const run = async (env: Record<string, string>) => {
  const stderr = capture();
  const code = await main(['node', 'fraudlink', 'table'], {
    env,
    stderr: stderr.stream,
    stdout: capture().stream,
  });
  return { code, stderr: stderr.text() };
};

describe('fraudlink table', () => {
  it('exits 2 naming every bad variable, and never shows an API key', async () => {
    const { code, stderr } = await run({ TABLE_API_KEYS: 'a secret key', HTTP_PORT: 'x' });
    expect(code).toBe(2);
    for (const variable of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'TABLE_API_KEYS', 'HTTP_PORT']) {
      expect(stderr).toContain(variable);
    }
    expect(stderr).not.toContain('a secret key');
  });

  it('exits 1 naming the store when it cannot be opened', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fraudlink-cli-table-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    // A file where the store's folder should be.
    await writeFile(join(dir, 'file'), '');
    const { code, stderr } = await run({
      KAFKA_BROKERS: '127.0.0.1:1',
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1',
      TABLE_DB_PATH: join(dir, 'file', 'table.db'),
      HTTP_PORT: '0',
      LOG_LEVEL: 'silent',
    });
    expect(code).toBe(1);
    expect(stderr).toContain(`the alert table's store ${join(dir, 'file', 'table.db')} cannot be opened`);
  });
});
