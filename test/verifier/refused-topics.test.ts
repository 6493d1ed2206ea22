import { describe, expect, it } from 'vitest';
import { RefusedReplyTopics } from '../../src/verifier/refused-topics.ts';

describe('RefusedReplyTopics', () => {
  it('holds a refused topic for ttlMs, then lets it be tried again', () => {
    let clock = 1_000;
    const refused = new RefusedReplyTopics(60_000, () => clock);
    expect(refused.has('replies.team-a')).toBe(false);
    refused.refuse('replies.team-a');
    clock += 59_999;
    expect(refused.has('replies.team-a')).toBe(true);
    expect(refused.has('replies.team-b')).toBe(false);
    clock += 1;
    expect(refused.has('replies.team-a')).toBe(false);
    // Refused again: held again from then.
    refused.refuse('replies.team-a');
    expect(refused.has('replies.team-a')).toBe(true);
  });

  it("holds a topic whose subject the registry refused apart from the broker's refusals, as long", () => {
    let clock = 1_000;
    const refused = new RefusedReplyTopics(60_000, () => clock);
    refused.refuseSchema('replies.team-a');
    expect(refused.schemaRefused('replies.team-a')).toBe(true);
    // Its JSON replies need no schema: the broker has not refused the topic.
    expect(refused.has('replies.team-a')).toBe(false);
    clock += 60_000;
    expect(refused.schemaRefused('replies.team-a')).toBe(false);
  });
});
