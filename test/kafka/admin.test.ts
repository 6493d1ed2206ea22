import type { Admin } from '@fraudlink/kafkajs';
import { describe, expect, it } from 'vitest';
import { wrapAdmin } from '../../src/kafka/admin.ts';

/** A kafkajs admin whose metadata lookups answer as `answer` says. */
function adminAnswering(answer: () => Promise<unknown>): { admin: Admin; asked: () => number } {
  let asked = 0;
  const admin = {
    fetchTopicMetadata: async () => {
      asked++;
      return answer();
    },
  } as unknown as Admin;
  return { admin, asked: () => asked };
}

describe('admin.partitionCount', () => {
  it('answers 0 for a topic the cluster does not have, at once', async () => {
    const unknown = Object.assign(new Error('This server does not host this topic-partition'), {
      type: 'UNKNOWN_TOPIC_OR_PARTITION',
      retriable: true,
    });
    const { admin, asked } = adminAnswering(() => Promise.reject(unknown));
    expect(await wrapAdmin(admin).partitionCount('replies')).toBe(0);
    expect(asked()).toBe(1);
  });

  it('rejects when the lookup keeps failing otherwise, instead of calling the topic missing', async () => {
    const refused = Object.assign(new Error('Connection error: connect ECONNREFUSED'), {
      name: 'KafkaJSConnectionError',
      retriable: true,
    });
    const { admin, asked } = adminAnswering(() => Promise.reject(refused));
    await expect(wrapAdmin(admin).partitionCount('replies')).rejects.toThrow(/ECONNREFUSED/);
    expect(asked()).toBe(6);
  });
});
