import { kafkajsPath } from '../kafkajs-path.ts';
import { isTlsRefusal } from '../security-errors.ts';
import { require } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 19. TLS refusals retried like a broker away.
 *
 * kafkajs reports every socket error as a KafkaJSConnectionError, which its retrier retries: a
 * broker certificate that fails verification, or a client certificate the broker refuses, was
 * retried through every attempt (22–31 s) before the caller heard of it, as if the broker were
 * away. The replacement class, swapped into kafkajs's errors module before the modules that throw
 * it load, marks those failures not retriable; a refused connection or a timeout stays retriable.
 *
 * Test: test/kafka/security-errors.test.ts › "makes kafkajs give up at once on a broker certificate
 * it cannot verify or a refused client certificate".
 */

type ConnectionErrorClass = new (message: string, options?: { broker?: string; code?: string }) => Error;

function installNotRetriableTlsRefusals(): void {
  const errorsModule = require(kafkajsPath('errors.js')) as { KafkaJSConnectionError: ConnectionErrorClass };
  const Original = errorsModule.KafkaJSConnectionError;
  class KafkaJSConnectionError extends Original {
    constructor(message: string, options: { broker?: string; code?: string } = {}) {
      super(message, options);
      if (options.code !== undefined && isTlsRefusal({ code: options.code })) {
        (this as { retriable?: boolean }).retriable = false;
      }
    }
  }
  errorsModule.KafkaJSConnectionError = KafkaJSConnectionError;
}

export function install(state: KafkajsFixState): void {
  installOnce(state, 'tls-refusals-not-retriable', installNotRetriableTlsRefusals);
}
