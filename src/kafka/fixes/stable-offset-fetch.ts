import { setTimeout as sleep } from 'node:timers/promises';
import { apiKeys, offers, type ProtocolError, type Versions } from '../protocol/flexible-request.ts';
import { type OffsetFetchArgs, type OffsetFetchResult, offsetFetchV7 } from '../protocol/offset-fetch-v7.ts';
import { brokerModulePath, require, senderOf } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 14. Committed offsets read while a transaction that moves them is completing (KIP-447).
 *
 * kafkajs's OffsetFetch (v1–v4) reads a group's offsets as committed so far, also while a
 * transaction that commits them is still completing: a member that takes a partition over just
 * then starts from the offset before it, and answers again what that transaction answered.
 *
 * Every OffsetFetch asks with RequireStable (protocol/offset-fetch-v7.ts) where the broker offers
 * OffsetFetch v7, and is asked again while the coordinator answers UNSTABLE_OFFSET_COMMIT, so that
 * the member starts after what the transaction answered.
 *
 * Test: test/kafka/transaction-v2.test.ts, "kafkajs's Broker with the v2 requests installed" ›
 * "fetches offsets with v7 where offered, asking again while they are unstable".
 */

/**
 * How long an OffsetFetch is asked again while a transaction keeps its offsets unstable before the
 * error goes to kafkajs (which retries it as it does any retriable error): well inside our
 * consumers' 10 s session (consumer.ts), since kafkajs heartbeats only between its own steps. A
 * transaction completes in milliseconds; one its producer left open (a crash) lasts until the
 * producer's successor fences it, or the transaction timeout.
 */
export const STABLE_OFFSETS_WAIT_MS = 5_000;

interface BrokerClass {
  prototype: {
    versions: Versions | null;
    offsetFetch(args: OffsetFetchArgs): Promise<OffsetFetchResult>;
  };
}

export function install(state: KafkajsFixState): void {
  installOnce(state, 'stable-offset-fetch', () => {
    const Broker = require(brokerModulePath) as BrokerClass;
    const send = senderOf(Broker);
    const original = Broker.prototype.offsetFetch;
    Broker.prototype.offsetFetch = async function offsetFetch(args) {
      if (!offers(this.versions, apiKeys.OffsetFetch as number, 7)) return original.call(this, args);
      const giveUpAt = Date.now() + STABLE_OFFSETS_WAIT_MS;
      for (let backoff = 10; ; backoff = Math.min(2 * backoff, 200)) {
        try {
          return (await send(this, offsetFetchV7(args))) as OffsetFetchResult;
        } catch (e) {
          if ((e as ProtocolError).type !== 'UNSTABLE_OFFSET_COMMIT' || Date.now() + backoff > giveUpAt) {
            throw e;
          }
        }
        await sleep(backoff);
      }
    };
  });
}
