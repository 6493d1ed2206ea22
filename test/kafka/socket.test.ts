import net from 'node:net';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { noDelaySocketFactory } from '../../src/kafka/socket.ts';

describe('noDelaySocketFactory', () => {
  it('connects with Nagle off and keep-alive on, and calls onConnect', async () => {
    const server = net.createServer((s) => s.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const noDelay = vi.spyOn(net.Socket.prototype, 'setNoDelay');
    const keepAlive = vi.spyOn(net.Socket.prototype, 'setKeepAlive');
    onTestFinished(() => {
      noDelay.mockRestore();
      keepAlive.mockRestore();
    });
    const { port } = server.address() as net.AddressInfo;
    const connected = Promise.withResolvers<void>();
    const socket = noDelaySocketFactory({ host: '127.0.0.1', port, onConnect: () => connected.resolve() });
    onTestFinished(() => void socket.destroy());
    await connected.promise;
    expect(noDelay.mock.contexts).toContain(socket);
    expect(noDelay).toHaveBeenCalledWith(true);
    expect(keepAlive).toHaveBeenCalledWith(true, 60_000);
  });
});
