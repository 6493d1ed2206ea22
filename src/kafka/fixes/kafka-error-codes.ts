import { KAFKA_ERROR_CODES_AFTER_KAFKAJS } from '../error-codes.ts';
import { type ErrorModule, errorModulePath, require } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 12. Kafka's error codes 89–133, which kafkajs 2.2.4 does not know.
 *
 * kafkajs reports such a code as "Unknown error code N" (KAFKAJS_UNKNOWN_ERROR_CODE, not retriable):
 * e.g. PRODUCER_FENCED (90), which brokers answer newer request versions with, or
 * TRANSACTION_ABORTABLE (120), which a transaction v2 Produce can return.
 *
 * kafkajs looks codes up in its exported `errorCodes` array at each error: the codes of
 * error-codes.ts are appended to it once, each with Kafka's type, message and retriability (its Java
 * exception a RetriableException or not).
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs with Kafka's error codes since 2.2.4" › "names a
 * code kafkajs did not know with its Kafka type, message and retriability".
 */

export function install(state: KafkajsFixState): void {
  installOnce(state, 'kafka-error-codes', () => {
    const { errorCodes } = require(errorModulePath) as ErrorModule;
    for (const [code, type, retriable, message] of KAFKA_ERROR_CODES_AFTER_KAFKAJS) {
      if (!errorCodes.some((e) => e.code === code)) errorCodes.push({ type, code, retriable, message });
    }
  });
}
