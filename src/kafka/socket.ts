import net from 'node:net';
import tls from 'node:tls';
import type { ISocketFactory, ISocketFactoryArgs } from 'kafkajs';

const KEEP_ALIVE_DELAY_MS = 60_000;

/**
 * kafkajs's socket factory with Nagle's algorithm switched off, as Kafka's Java client and the
 * broker do (TCP_NODELAY): a small request written while an earlier one's bytes are not yet
 * acknowledged would otherwise wait for that acknowledgement.
 */
export const noDelaySocketFactory = ({
  host,
  port,
  ssl,
  onConnect,
}: Omit<ISocketFactoryArgs, 'ssl'> & { ssl?: ISocketFactoryArgs['ssl'] }): ReturnType<ISocketFactory> => {
  const socket = ssl
    ? tls.connect({ host, port, ...(!net.isIP(host) && { servername: host }), ...ssl }, onConnect)
    : net.connect({ host, port }, onConnect);
  socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
  socket.setNoDelay(true);
  return socket;
};
