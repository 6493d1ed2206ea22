import { describe, expect, it } from 'vitest';
import type { OutgoingRecord, TransactionalProducer } from '../../src/kafka/index.ts';
import { ProducerTurns } from '../../src/verifier/producer-turns.ts';

/** Stand-in producers that record which one ran each transaction and which were closed. */
function standIns(refused: ReadonlySet<string> = new Set()) {
  const opened: string[] = [];
  const ran: string[] = [];
  const closed: string[] = [];
  const open = async (transactionalId: string): Promise<TransactionalProducer> => {
    if (refused.has(transactionalId)) throw new Error(`${transactionalId} refused`);
    const name = `${transactionalId}#${opened.filter((o) => o.split('#')[0] === transactionalId).length}`;
    opened.push(name);
    return {
      transaction: async () => {
        ran.push(name);
      },
      close: async () => {
        closed.push(name);
      },
    } as unknown as TransactionalProducer;
  };
  return { open, opened, ran, closed };
}

const RECORDS: OutgoingRecord[] = [];

describe('ProducerTurns', () => {
  it('runs each commit on the other producer than the one before', async () => {
    const producers = standIns();
    const turns = new ProducerTurns(['v', 'v.1'], producers.open);
    await turns.open();
    for (let i = 0; i < 3; i++) await turns.transaction(turns.next(), RECORDS, {});
    expect(producers.ran).toEqual(['v#0', 'v.1#0', 'v#0']);
  });

  it('replaces a producer by a new one with the same transactional id, closing the old', async () => {
    const producers = standIns();
    const turns = new ProducerTurns(['v', 'v.1'], producers.open);
    await turns.open();
    const turn = turns.next();
    await turns.renew(turn);
    await turns.transaction(turn, RECORDS, {});
    expect(producers.closed).toEqual(['v#0']);
    expect(producers.ran).toEqual(['v#1']);
  });

  it('throws a refusal once all have settled, and closes the producers it did open', async () => {
    const producers = standIns(new Set(['v.1']));
    const turns = new ProducerTurns(['v', 'v.1'], producers.open);
    await expect(turns.open()).rejects.toThrow('v.1 refused');
    await turns.close();
    expect(producers.closed).toEqual(['v#0']);
  });
});
