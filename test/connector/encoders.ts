import type { AlertEncoders } from '../../src/connector/prepare.ts';
import { avroEncoder } from '../../src/kafka/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';

/** The real Avro encoders of both alert schemas, under made-up registry ids (no registry involved). */
export function testEncoders(): AlertEncoders {
  return {
    AlertUpserted: avroEncoder(101, 'test-AlertUpserted', loadSchema(SchemaNames.AlertUpserted)),
    AlertDeactivated: avroEncoder(102, 'test-AlertDeactivated', loadSchema(SchemaNames.AlertDeactivated)),
  };
}
