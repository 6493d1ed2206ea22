// What the bare-client scripts (bench/bare-*.ts) share. Nothing here may load src/kafka's kafkajs.ts:
// the bare clients run stock kafkajs unless BARE_KAFKAJS_FIXES=1 asks for fraudlink's fixes.
import type * as Kafkajs from 'kafkajs';
import { requiredEnv } from './env.ts';

export type KafkajsModule = typeof Kafkajs;

/** kafkajs, stock or with fraudlink's fixes as BARE_KAFKAJS_FIXES says, and a client of BARE_BROKERS. */
export async function bareKafka(): Promise<{ kafkajs: KafkajsModule; kafka: Kafkajs.Kafka }> {
  // fraudlink's fixes apply to its own copy of kafkajs (the @fraudlink/kafkajs alias), not to 'kafkajs'.
  const kafkajs = (process.env.BARE_KAFKAJS_FIXES === '1'
    ? (await import('../src/kafka/kafkajs.ts')).default
    : (await import('kafkajs')).default) as unknown as KafkajsModule;
  const kafka = new kafkajs.Kafka({
    brokers: [requiredEnv('BARE_BROKERS')],
    clientId: 'bench-bare',
    logLevel: kafkajs.logLevel.NOTHING,
  });
  return { kafkajs, kafka };
}
