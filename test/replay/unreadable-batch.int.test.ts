import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { testClients, testProducer, testTopics } from '../helpers/kafka.ts';
import { stackEnv } from '../helpers/stack.ts';
import { writeBomb } from '../kafka/unreadable-batches.fixtures.ts';

describe('replay of an alerts topic holding a record batch that cannot be read', () => {
  it('stops naming the batch, or with --skip-undecodable skips it with a warning and applies the records after it', async () => {
    const { kafka } = testClients();
    const [topic = ''] = await testTopics(kafka, ['replay-unreadable']);
    const producer = await testProducer(kafka);
    // Tombstones need no registry: the table stays empty, and each counts as an event applied.
    await producer.send([{ topic, key: 'DE89370400440532013000', value: null }]);
    const bomb = await writeBomb(topic);
    await producer.send([{ topic, key: 'GB82WEST12345698765432', value: null }]);
    const env = { ...stackEnv(), ALERTS_TOPIC: topic, LOG_LEVEL: 'warn' };

    const strict = runCli(['replay', '--summary'], env);
    expect(await strict.exited).toBe(1);
    expect(strict.stderr()).toMatch(
      new RegExp(
        `DECODE_FAILED: ${topic.replace(/\./g, '\\.')} partition 0 offsets ${bomb.firstOffset} to ${bomb.lastOffset}: ` +
          'a zstd record batch that cannot be read',
      ),
    );

    const lenient = runCli(['replay', '--skip-undecodable', '--summary'], env);
    expect(await lenient.exited).toBe(0);
    expect(JSON.parse(lenient.stdout())).toMatchObject({ events: 2, skipped: 1 });
    const warning = lenient
      .stderr()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => String(line.msg).startsWith('skipping a record batch that cannot be read'));
    expect(warning).toMatchObject({
      topic,
      partition: 0,
      firstOffset: bomb.firstOffset,
      lastOffset: bomb.lastOffset,
      codec: 'zstd',
    });
  });
});
