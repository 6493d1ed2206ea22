import { readFileSync } from 'node:fs';

/** Full names of the Avro records fraudlink publishes and reads; each has `schemas/<name>.avsc`. */
export const SchemaNames = {
  AlertUpserted: 'fraudlink.alerts.AlertUpserted',
  AlertDeactivated: 'fraudlink.alerts.AlertDeactivated',
  VerificationRequest: 'fraudlink.vop.VerificationRequest',
  VerificationResult: 'fraudlink.vop.VerificationResult',
} as const;

export type SchemaName = (typeof SchemaNames)[keyof typeof SchemaNames];

export interface AvroRecordSchema {
  type: 'record';
  name: string;
  namespace: string;
  fields: unknown[];
  [key: string]: unknown;
}

// schemas/ sits beside src/ and dist/ alike, so one relative URL serves both.
const schemasDir = new URL('../schemas/', import.meta.url);

/** Reads `schemas/<name>.avsc`. Callers load each contract once at start. */
export function loadSchema(name: SchemaName): AvroRecordSchema {
  const schema = JSON.parse(readFileSync(new URL(`${name}.avsc`, schemasDir), 'utf8')) as AvroRecordSchema;
  if (`${schema.namespace}.${schema.name}` !== name) {
    throw new Error(`schemas/${name}.avsc declares ${schema.namespace}.${schema.name}`);
  }
  return schema;
}
