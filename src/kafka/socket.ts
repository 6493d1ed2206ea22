import { createRequire } from 'node:module';
import type { ISocketFactory, ISocketFactoryArgs } from '@fraudlink/kafkajs';
import { kafkajsPath } from './kafkajs-path.ts';

const require = createRequire(import.meta.url);
// kafkajs's own factory (net or tls connect, TLS servername, 60 s keep-alive); not exported by its index.
const createDefaultSocketFactory = require(kafkajsPath('network/socketFactory.js')) as () => ISocketFactory;
const defaultSocketFactory = createDefaultSocketFactory();

/**
 * kafkajs's socket factory with Nagle's algorithm switched off, as Kafka's Java client and the
 * broker do (TCP_NODELAY): a small request written while an earlier one's bytes are not yet
 * acknowledged would otherwise wait for that acknowledgement.
 */
export const noDelaySocketFactory = (
  args: Omit<ISocketFactoryArgs, 'ssl'> & { ssl?: ISocketFactoryArgs['ssl'] },
): ReturnType<ISocketFactory> => defaultSocketFactory(args as ISocketFactoryArgs).setNoDelay(true);
