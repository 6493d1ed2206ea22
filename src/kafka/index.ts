export { avroEncoder } from './avro-encoder.ts';
export { createKafkaClient, type KafkaClientOptions } from './client.ts';
export {
  DLQ_TRUNCATED_HEADER,
  type FitForDlqOptions,
  fitForDlq,
} from './dlq.ts';
export { oversizeTopicsOf, refusedTopicsOf, troubledTopicsOf } from './errors.ts';
export { batchBytes } from './records.ts';
export {
  type AvroSchemaJson,
  createSchemaRegistry,
  type Decoded,
  type Encoder,
  fullName,
  type RegistryCompatibility,
  type SchemaRegistryClient,
  type SchemaRegistryOptions,
  subjectFor,
} from './registry.ts';
export { isReadOnlyRegistry, isSchemaRefusal } from './registry-errors.ts';
export type * from './types.ts';
