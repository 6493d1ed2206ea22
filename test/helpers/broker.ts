import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { ensureKafka } from '../../src/stack/install.ts';
import { requireJava } from '../../src/stack/java.ts';
import { isAlive, stopProcess } from '../../src/stack/process.ts';
import { type KafkaNode, restartKafka, startKafka } from '../../src/stack/services.ts';

/**
 * A Kafka broker of the test's own, on free ports in a fresh directory, for a test that stops it:
 * never the shared one. `kill()` ends it with SIGKILL; `restart()` starts it again on the same ports
 * with the same data. Stopped and removed when the test ends. With `port`, it listens there: a
 * component can be pointed at it before it comes up.
 */
export async function dedicatedBroker({ port }: { port?: number } = {}) {
  const java = (await requireJava(17, 'Kafka')).java;
  const libs = await ensureKafka(silentLogger());
  const dir = mkdtempSync(join(tmpdir(), 'fraudlink-broker-'));
  const options = { java, libs, dir, ownerPid: process.pid };
  let node: KafkaNode = await startKafka({ ...options, ...(port !== undefined && { port }) });
  onTestFinished(async () => {
    await stopProcess(node.pid);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    brokers: node.brokers,
    async kill(): Promise<void> {
      process.kill(node.pid, 'SIGKILL');
      await stopProcess(node.pid, 0);
      if (isAlive(node.pid)) throw new Error(`broker ${node.pid} still alive after SIGKILL`);
    },
    async restart(): Promise<void> {
      node = await restartKafka(options, node);
    },
  };
}
