export { createKafkaClient, type KafkaClient, type KafkaClientOptions } from './client.ts';
export type { ReadTopicOptions } from './consumer.ts';
export type { TransactionalProducerOptions } from './producer.ts';
export {
  type AvroSchemaJson,
  createSchemaRegistry,
  type Decoded,
  type Encoder,
  fullName,
  type SchemaRegistryClient,
  subjectFor,
} from './registry.ts';
export type * from './types.ts';
