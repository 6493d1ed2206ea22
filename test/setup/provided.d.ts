import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Comma-separated host:port of the real broker the integration tests use. */
    kafkaBrokers: string;
    /** Confluent-compatible API base of the real schema registry. */
    schemaRegistryUrl: string;
  }
}
