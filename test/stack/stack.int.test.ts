import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { isAlive } from '../../src/stack/process.ts';
import { KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_SETTINGS_ID } from '../../src/stack/services.ts';
import { findRunningStack } from '../../src/stack/stack.ts';

const cli = fileURLToPath(new URL('../../src/stack/cli.ts', import.meta.url));

function stackCli(args: string[]): Promise<{ code: number | null; json: Record<string, unknown> }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.once('exit', (code) => resolve({ code, json: JSON.parse(out || '{}') as Record<string, unknown> }));
  });
}

/** Bounded wait for processes we do not own to end (no event exists for that). */
async function gone(pids: number[], withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (pids.every((p) => !isAlive(p))) return true;
    await delay(200);
  }
  return pids.every((p) => !isAlive(p));
}

describe('the local stack launcher', () => {
  it('reuses a running stack on a second up, not one started with other broker settings, and leaves no JVM after down', async () => {
    const state = join(mkdtempSync(join(tmpdir(), 'fraudlink-stack-')), 'state.json');
    onTestFinished(() => stackCli(['--state', state, 'down']).then(() => {}));
    const first = await stackCli(['--state', state, 'up']);
    expect(first.code).toBe(0);
    expect(first.json.reused).toBe(false);
    // The broker runs with the JVM flags of Kafka's own start script (20 ms G1 pause goal and the rest).
    const argv = readFileSync(`/proc/${first.json.kafkaPid}/cmdline`, 'utf8').split('\0');
    expect(argv).toEqual(expect.arrayContaining(KAFKA_JVM_PERFORMANCE_OPTS));
    expect(argv.indexOf('-XX:MaxGCPauseMillis=20')).toBeLessThan(argv.indexOf('kafka.Kafka'));
    const second = await stackCli(['--state', state, 'up']);
    expect(second.json).toMatchObject({
      reused: true,
      brokers: first.json.brokers,
      kafkaPid: first.json.kafkaPid,
    });
    expect((await stackCli(['--state', state, 'status'])).json).toMatchObject({
      running: true,
      outdated: false,
      kafkaSettings: KAFKA_SETTINGS_ID,
    });
    // As an older fraudlink recorded it: its broker's settings (no authorizer) are not today's.
    const recorded = JSON.parse(readFileSync(state, 'utf8')) as Record<string, unknown>;
    writeFileSync(state, JSON.stringify({ ...recorded, kafkaSettings: undefined }));
    const outdated = await stackCli(['--state', state, 'up']);
    expect(outdated.code).toBe(1);
    expect(outdated.json).toEqual({});
    expect(await findRunningStack(state)).toBeUndefined();
    expect((await stackCli(['--state', state, 'status'])).json).toMatchObject({
      running: true,
      outdated: true,
    });
    const pids = [first.json.kafkaPid, first.json.registryPid] as number[];
    const down = await stackCli(['--state', state, 'down']);
    expect(down.json.stopped).toBe(true);
    expect(pids.some((p) => isAlive(p))).toBe(false);
    expect((await stackCli(['--state', state, 'status'])).code).toBe(1);
  });

  it('ends its JVMs soon after the process that owns them is killed with SIGKILL', async () => {
    const owner = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { startStack } from ${JSON.stringify(fileURLToPath(new URL('../../src/stack/stack.ts', import.meta.url)))};
         const s = await startStack({ ownerPid: process.pid });
         console.log(JSON.stringify({ pids: [s.kafkaPid, s.registryPid] }));
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    onTestFinished(() => {
      owner.kill('SIGKILL');
    });
    const pids = await new Promise<number[]>((resolve) => {
      owner.stdout.on('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { pids: number[] }).pids));
    });
    expect(pids.every((p) => isAlive(p))).toBe(true);
    owner.kill('SIGKILL');
    expect(await gone(pids, 30_000)).toBe(true);
  });
});
