import net from 'node:net';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { testClients } from '../helpers/kafka.ts';

describe('the Kafka client on a real broker', () => {
  it('opens its broker connections with Nagle off (TCP_NODELAY, as the Java client does)', async () => {
    const noDelay = vi.spyOn(net.Socket.prototype, 'setNoDelay');
    onTestFinished(() => noDelay.mockRestore());
    const { kafka } = testClients();
    const admin = await kafka.admin();
    onTestFinished(() => admin.close());
    expect(noDelay.mock.calls.length).toBeGreaterThan(0);
    expect(noDelay.mock.calls.every(([on]) => on === true)).toBe(true);
  });
});
