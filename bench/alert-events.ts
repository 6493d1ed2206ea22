// A topic of alert events for the replay and table benchmarks: AlertUpserted, and (unless asked
// otherwise) every tenth event an AlertDeactivated, cycling over a number of IBANs, Avro-encoded
// through the registry.
import { composeIBAN } from 'ibantools';
import type { KafkaCompression } from '../src/config/index.ts';
import { CODEC_IDS } from '../src/kafka/codecs.ts';
import { createSchemaRegistry } from '../src/kafka/index.ts';
// Through src/kafka, as replayAlerts loads it: fraudlink's fixes are in place before any kafkajs module.
import kafkajs from '../src/kafka/kafkajs.ts';
import { loadSchema, SchemaNames } from '../src/schemas.ts';
import { fmt } from './common.ts';

const BATCH = 10_000;

/** The n-th IBAN of a benchmark topic: German, with valid check digits, so that lookups accept it. */
export function benchIban(n: number): string {
  const iban = composeIBAN({ countryCode: 'DE', bban: String(n).padStart(18, '0') });
  if (!iban) throw new Error(`no IBAN for ${n}`);
  return iban;
}

/** Whether event n (of IBAN n % ibans) deactivates its alert, in a topic with deactivations. */
const deactivates = (n: number): boolean => n % 10 === 9;

export interface AlertTopic {
  topic: string;
  events: number;
  ibans: number;
  /** Deletes the topic. */
  remove(): Promise<void>;
}

/**
 * Creates `topic` (six partitions) and writes `events` events over `ibans` IBANs, with
 * KAFKA_COMPRESSION's codec when set (so that readers read it as a compressed alerts topic).
 */
export async function writeAlertTopic(
  stack: { brokers: string; registryUrl: string },
  topic: string,
  events: number,
  ibans: number,
  { deactivations = true }: { deactivations?: boolean } = {},
): Promise<AlertTopic> {
  const kafka = new kafkajs.Kafka({
    brokers: [stack.brokers],
    clientId: 'bench-alert-events',
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 6, replicationFactor: 1 }] });
  const registry = createSchemaRegistry({ url: stack.registryUrl });
  const upserted = await registry.encoder(topic, loadSchema(SchemaNames.AlertUpserted));
  const deactivated = await registry.encoder(topic, loadSchema(SchemaNames.AlertDeactivated));
  const codec = (process.env.KAFKA_COMPRESSION ?? 'none') as KafkaCompression;
  const compression = CODEC_IDS[codec];
  if (compression === undefined) throw new Error(`KAFKA_COMPRESSION=${codec}: not one of Kafka's codecs`);
  const producer = kafka.producer({ createPartitioner: kafkajs.Partitioners.DefaultPartitioner });
  await producer.connect();
  const ibanOf = Array.from({ length: Math.min(ibans, events) }, (_, i) => benchIban(i));
  const started = performance.now();
  for (let sent = 0; sent < events; sent += BATCH) {
    const messages = Array.from({ length: Math.min(BATCH, events - sent) }, (_, i) => {
      const n = sent + i;
      const iban = ibanOf[n % ibans] as string;
      const value = {
        eventId: String(n).padStart(64, '0'),
        alertId: `A-${n % ibans}`,
        iban,
        bic: null,
        qualification: 'CONFIRMED',
        qualificationRaw: null,
        reportsCount: n % 7,
        updatedAt: 1_795_000_000_000 + n,
        observedAt: 1_795_000_000_000 + n,
      };
      return {
        key: iban,
        value: deactivations && deactivates(n) ? deactivated.encode(value) : upserted.encode(value),
      };
    });
    await producer.send({ topic, messages, compression });
  }
  await producer.disconnect();
  console.log(
    `wrote ${fmt(events)} events over ${fmt(ibanOf.length)} IBANs to ${topic} (KAFKA_COMPRESSION=${codec}) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return {
    topic,
    events,
    ibans: ibanOf.length,
    remove: async () => {
      await admin.deleteTopics({ topics: [topic] }).catch(() => {});
      await admin.disconnect();
    },
  };
}
