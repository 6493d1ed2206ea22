export { avroEncoder } from './avro-encoder.ts';
export { createKafkaClient, type KafkaClientOptions } from './client.ts';
export { oversizeTopicsOf, refusedTopicsOf } from './errors.ts';
export { batchBytes } from './records.ts';
export {
  type AvroSchemaJson,
  createSchemaRegistry,
  type Decoded,
  type Encoder,
  fullName,
  type RegistryCompatibility,
  retriedAtStartUp,
  type SchemaRegistryClient,
  type SchemaRegistryOptions,
  subjectFor,
} from './registry.ts';
export { isReadOnlyRegistry, isSchemaRefusal } from './registry-errors.ts';
export type * from './types.ts';
