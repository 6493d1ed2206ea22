import { describe, expect, it } from 'vitest';
import { TimeoutError } from '../../src/errors.ts';
import { connectorHarness } from '../connector/harness.ts';
import { verifierHarness } from '../verifier/harness.ts';

const IBAN = 'DE89370400440532013000';
const refusal =
  /API_BASE_URL: http:\/\/127\.0\.0\.1:\d+ answers as the fraudlink sandbox \(x-fraudlink-sandbox: 1\)/;

// The harnesses set ALLOW_SANDBOX_UPSTREAM=true, as every test running a component on the sandbox;
// these take it away.
describe('an upstream that answers as the sandbox', () => {
  it('stops the connector at its first export page, exit 2 naming API_BASE_URL, having published nothing', async () => {
    const h = await connectorHarness({ alerts: 20 });
    const connector = h.start({ ALLOW_SANDBOX_UPSTREAM: 'false' });
    expect(await connector.exited).toBe(2);
    expect(connector.stderr()).toMatch(refusal);
    expect(h.sandbox.requestLog()).toHaveLength(1);
    const events: unknown[] = [];
    await h.kafka.readTopic(h.env.ALERTS_TOPIC, (records) => void events.push(...records), {
      awaitOpenTransactions: { timeoutMs: 30_000 },
    });
    expect(events).toEqual([]);
  });

  it('is taken by the connector with ALLOW_SANDBOX_UPSTREAM=true', async () => {
    const h = await connectorHarness({ alerts: 20 });
    const connector = h.start();
    expect(await h.converged()).toHaveLength(20);
    connector.child.kill('SIGTERM');
    expect(await connector.exited).toBe(0);
  });

  it('stops the verifier at the first verify answer, exit 2 naming API_BASE_URL, with no reply committed', async () => {
    const h = await verifierHarness();
    const verifier = h.start('sandbox-refused', { ALLOW_SANDBOX_UPSTREAM: 'false' });
    await verifier.logLine((l) => l.msg === 'verifier started');
    const client = await h.client('json');
    const asked = client.verify({ iban: IBAN, partyName: 'Anna Schmidt' }, { timeoutMs: 4000 });
    const answer = asked.catch((err: unknown) => err);
    expect(await verifier.exited).toBe(2);
    expect(verifier.stderr()).toMatch(refusal);
    expect(await answer).toBeInstanceOf(TimeoutError);
    const replies: unknown[] = [];
    await h.kafka.readTopic(h.config.verifier.repliesTopic, (records) => void replies.push(...records), {
      awaitOpenTransactions: { timeoutMs: 30_000 },
    });
    expect(replies).toEqual([]);
  });

  it('is taken by the verifier with ALLOW_SANDBOX_UPSTREAM=true', async () => {
    const h = await verifierHarness();
    const verifier = h.start('sandbox-allowed');
    await verifier.logLine((l) => l.msg === 'verifier started');
    const client = await h.client('json');
    const result = await client.verify({ iban: IBAN, partyName: 'Anna Schmidt' }, { timeoutMs: 10_000 });
    expect(result.outcome).toBe('COMPLETED');
    verifier.child.kill('SIGTERM');
    expect(await verifier.exited).toBe(0);
  });
});
