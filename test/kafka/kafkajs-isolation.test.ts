import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

/**
 * A host application's process: it may load its own kafkajs before or after fraudlink's Kafka layer.
 * Prints whether each copy drops a record of an aborted transaction, and whether the host's Encoder
 * kept its stock methods.
 */
const hostScript = (kafkajsFirst: boolean) => `
import { createRequire } from 'node:module';
const require = createRequire(${JSON.stringify(join(root, 'package.json'))});
const stockEncoder = (name) => require('kafkajs/src/protocol/encoder.js').prototype[name].toString();
const before = ${kafkajsFirst} ? (require('kafkajs'), stockEncoder('writeVarLong')) : undefined;
await import(${JSON.stringify(join(root, 'src', 'kafka', 'kafkajs.ts'))});
if (!${kafkajsFirst}) require('kafkajs');
// Fetched from offset 5; the transactions of producers 1 and 2 began at 1 and 2 and were aborted.
const message = (offset, producerId) => ({
  offset: String(offset), key: Buffer.from('k'), value: Buffer.from('v'), isControlRecord: false,
  batchContext: { producerId: String(producerId), inTransaction: true },
});
const delivered = (pkg) => {
  const Batch = require(pkg + '/src/consumer/batch.js');
  return new Batch('t', '5', {
    partition: 0, highWatermark: '10', messages: [message(5, 2)],
    abortedTransactions: [{ producerId: '1', firstOffset: '1' }, { producerId: '2', firstOffset: '2' }],
  }).messages.length;
};
console.log(JSON.stringify({
  fraudlink: delivered('@fraudlink/kafkajs'),
  host: delivered('kafkajs'),
  hostEncoderUnchanged: before === undefined ? null : before === stockEncoder('writeVarLong'),
  sameModule: require('kafkajs') === require('@fraudlink/kafkajs'),
}));
`;

async function runHost(kafkajsFirst: boolean) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', hostScript(kafkajsFirst)],
    { cwd: root },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
}

describe("fraudlink's copy of kafkajs", () => {
  it.each([
    [true, 'kafkajs loaded first'],
    [false, 'fraudlink loaded first'],
  ])(
    'carries the fixes, and leaves the host application its own stock kafkajs, whatever the order (%s: %s)',
    async (kafkajsFirst) => {
      const seen = await runHost(kafkajsFirst);
      // fraudlink's reader drops the aborted record; the host's stock kafkajs delivers it, as it always did.
      expect(seen).toMatchObject({ fraudlink: 0, host: 1, sameModule: false });
      if (kafkajsFirst) expect(seen.hostEncoderUnchanged).toBe(true);
    },
  );
});
