import { readFileSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type avro from 'avsc';
import { LRUCache } from 'lru-cache';
import type { RegistryConfig } from '../config/index.ts';
import { DecodeError, SchemaRegistryError } from '../errors.ts';
import {
  type AvroSchemaJson,
  avroEncoder,
  avroOptions,
  avroTypeOf,
  type Encoder,
  fullName,
  subjectFor,
} from './avro-encoder.ts';
import { isNotFound, isRefused, isRetriableRegistryFailure, registryError } from './registry-errors.ts';
import { unframe } from './wire-format.ts';

export { type AvroSchemaJson, type Encoder, fullName, subjectFor };

export type RegistryCompatibility = keyof typeof COMPATIBILITY;

export interface SchemaRegistryOptions extends RegistryConfig {
  /**
   * Must equal the registry's own default: the client compares it with `GET /config/{subject}`, which
   * Apicurio answers with its global default even for a subject without a rule. Default BACKWARD.
   */
  compatibility?: RegistryCompatibility;
  /** Longest time one registry HTTP request may go without a byte moving; default REGISTRY_TIMEOUT_MS. */
  timeoutMs?: number;
  /** How many schema ids' readers, and lookups, are kept each; default SCHEMA_ID_CACHE_MAX. */
  schemaIdCacheMax?: number;
}

/**
 * 10 s, the same budget API_TIMEOUT_MS gives an upstream call by default. A healthy registry answers
 * a lookup in milliseconds and a registration (written to its store first) well within that, so only
 * a stuck registry reaches it: start-up, a verifier batch or a replay waiting on an uncached schema id
 * then fails with a retriable SchemaRegistryError instead of waiting for ever (Node's HTTP client has
 * no timeout of its own).
 */
export const REGISTRY_TIMEOUT_MS = 10_000;

/**
 * How often the client itself asks a GET again after a failed connection or a 5xx, within ~3 s
 * (mappersmith's retry middleware retries GETs only): a registration's POST it does not ask again,
 * nor a request that timed out. A registration starts with a GET of its subject's config.
 */
export const REGISTRY_CLIENT_RETRIES = 5;

/**
 * How many schema ids the client keeps the readers of, and the lookups (in progress, or ended in a
 * verdict on a schema served: not Avro, not readable) of, each: the least recently used dropped
 * first. An id unknown to the registry is not kept: it is asked again. The ids come from
 * the values read, which anyone who writes to a topic chooses.
 */
export const SCHEMA_ID_CACHE_MAX = 1000;

type RegistryMiddleware = NonNullable<ConstructorParameters<typeof SchemaRegistry>[0]['middlewares']>[number];

/**
 * Gives every request the client sends mappersmith's per-request `timeout`, an idle timeout on its
 * socket: it fires once nothing has moved for that long, while connecting, awaiting the answer or
 * mid-body (a registry trickling bytes slower than that would not be cut off). mappersmith then aborts
 * the request and fails it as "Timeout (10000ms)", which its retry middleware does not retry, so a
 * stuck registry fails the call within one timeout.
 */
const timeoutMiddleware =
  (timeoutMs: number): RegistryMiddleware =>
  () => ({
    async prepareRequest(next) {
      return (await next()).enhance({ timeout: timeoutMs });
    },
  });

export interface Decoded {
  schemaId: number;
  /** Full record name, e.g. `fraudlink.alerts.AlertUpserted`. */
  name: string;
  value: Record<string, unknown>;
}

export interface SchemaRegistryClient {
  /** Registers under `<topic>-<full record name>` (TopicRecordNameStrategy); the same schema keeps its id. */
  register(topic: string, schema: AvroSchemaJson): Promise<number>;
  /** Registers, then returns a sync encoder with its avsc type built once. */
  encoder<T>(topic: string, schema: AvroSchemaJson): Promise<Encoder<T>>;
  /**
   * DecodeError for bad bytes, an id the registry does not know, or one of a schema that is not a
   * readable Avro schema (JSON, Protobuf); SchemaRegistryError when the registry cannot answer.
   */
  decode(buffer: Buffer | null): Promise<Decoded>;
  /** The synchronous fast path: undefined when the schema id is not cached yet. */
  decodeCached(buffer: Buffer | null): Decoded | undefined;
}

interface Reader {
  name: string;
  type: avro.Type;
}

function decodeWith(reader: Reader, schemaId: number, body: Buffer): Decoded {
  try {
    return { schemaId, name: reader.name, value: reader.type.fromBuffer(body) as Record<string, unknown> };
  } catch (err) {
    throw new DecodeError(
      `value is not a valid ${reader.name} Avro body (schema id ${schemaId}): ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * Throws unless `found`, the registry's answer to `GET /schemas/ids/{schemaId}`, is an Avro schema.
 * One of another type (JSON, Protobuf) is the value's fault, as an id the registry does not know is:
 * DecodeError. An answer without a schema is not from a registry (SCHEMA_REGISTRY_URL's fault, as a
 * 404 to everything is): a SchemaRegistryError.
 */
function checkedAvro(schemaId: number, found: unknown): void {
  const { schema, schemaType = 'AVRO' } = (found ?? {}) as { schema?: unknown; schemaType?: unknown };
  if (typeof schema !== 'string') {
    throw new SchemaRegistryError(
      `reading schema id ${schemaId} answered no schema, not from a schema registry: ` +
        'does SCHEMA_REGISTRY_URL name its API root (Apicurio: …/apis/ccompat/v7)?',
      { retriable: false },
    );
  }
  if (schemaType !== 'AVRO') {
    throw new DecodeError(`schema id ${schemaId} is a ${String(schemaType)} schema, not an Avro one`);
  }
}

/**
 * The HTTPS agent of SCHEMA_REGISTRY_TLS_*: the CA that signed the registry's certificate (the
 * system's CAs otherwise) and the client certificate of mutual TLS. The files were checked at start
 * (config/tls.ts); one gone since is a SchemaRegistryError naming its variable. Keep-alive, as Node's
 * default agent.
 */
function tlsAgent(tls: NonNullable<RegistryConfig['tls']>): HttpsAgent {
  const read = (file: string | undefined, variable: string): Buffer | undefined => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new SchemaRegistryError(`${variable}: cannot read the file it names (${reason})`, { cause: err });
    }
  };
  const ca = read(tls.caFile, 'SCHEMA_REGISTRY_TLS_CA');
  const cert = read(tls.certFile, 'SCHEMA_REGISTRY_TLS_CERT');
  const key = read(tls.keyFile, 'SCHEMA_REGISTRY_TLS_KEY');
  return new HttpsAgent({ keepAlive: true, ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }) });
}

export function createSchemaRegistry(options: SchemaRegistryOptions): SchemaRegistryClient {
  const args: ConstructorParameters<typeof SchemaRegistry>[0] = {
    host: options.url,
    retry: { retries: REGISTRY_CLIENT_RETRIES },
    middlewares: [timeoutMiddleware(options.timeoutMs ?? REGISTRY_TIMEOUT_MS)],
  };
  if (options.auth) args.auth = options.auth;
  if (options.tls) args.agent = tlsAgent(options.tls);
  const registry = new SchemaRegistry(args, { forSchemaOptions: avroOptions() });
  const compatibility = COMPATIBILITY[options.compatibility ?? 'BACKWARD'];
  // `GET /subjects` and `GET /schemas/ids/{id}` through the client's own HTTP stack (auth, timeout,
  // retries): its `api` is private in the typings. The client has no call of its own for the first,
  // and its getSchema() builds what the second answers whatever its type, JSON or Protobuf too.
  const { api } = registry as unknown as {
    api: {
      Subject: { all(params: object): Promise<unknown> };
      Schema: { find(params: { id: number }): Promise<{ data(): unknown }> };
    };
  };
  const listSubjects = () => api.Subject.all({});
  const max = options.schemaIdCacheMax ?? SCHEMA_ID_CACHE_MAX;
  const readers = new LRUCache<number, Reader>({ max });
  const pending = new LRUCache<number, Promise<Reader>>({ max });

  /**
   * The avsc type of the schema the registry serves under `schemaId`. Its type is checked first
   * (checkedAvro), then the client builds it, resolving any references to other subjects: it asks
   * for the schema again, once per id and process. A schema it cannot build is the value's fault.
   */
  const avroTypeFor = async (schemaId: number): Promise<avro.Type> => {
    checkedAvro(schemaId, (await api.Schema.find({ id: schemaId })).data());
    try {
      return (await registry.getSchema(schemaId)) as unknown as avro.Type;
    } catch (err) {
      // The client's error for a schema it could not build; an HTTP failure is not one.
      if ((err as Error).name !== 'ConfluentSchemaRegistryArgumentError') throw err;
      throw new DecodeError(
        `schema id ${schemaId} is an Avro schema fraudlink cannot read: ${(err as Error).message}`,
        { cause: err },
      );
    }
  };

  const readerFor = (schemaId: number): Promise<Reader> => {
    let p = pending.get(schemaId);
    if (!p) {
      p = avroTypeFor(schemaId).then(
        (type) => {
          const reader = { name: type.name ?? '(anonymous)', type };
          readers.set(schemaId, reader);
          return reader;
        },
        async (err: unknown) => {
          // The verdict on a schema the registry served stays: the schema of an id does not change.
          if (err instanceof DecodeError) throw err;
          pending.delete(schemaId);
          if (err instanceof SchemaRegistryError) throw err;
          if (!isNotFound(err)) throw registryError(err, `reading schema id ${schemaId}`);
          // An unknown id is the data's fault, but a 404 is also what a wrong SCHEMA_REGISTRY_URL (a
          // missing /apis/ccompat/v7) or a proxy answers for everything: only a registry that lists
          // its subjects is taken at its word.
          try {
            await listSubjects();
          } catch (probe) {
            if (isNotFound(probe)) {
              throw new SchemaRegistryError(
                `reading schema id ${schemaId} answered 404, and so did listing the registry's subjects ` +
                  `(${(probe as Error).message}): is SCHEMA_REGISTRY_URL the registry's Confluent-compatible API base?`,
                { cause: err, retriable: false },
              );
            }
            // A registry that refuses this account the list (401, 403) is a registry all the same.
            if (!isRefused(probe)) {
              throw new SchemaRegistryError(
                `reading schema id ${schemaId} answered 404, and listing the registry's subjects failed: ` +
                  (probe as Error).message,
                { cause: probe, retriable: isRetriableRegistryFailure(probe) },
              );
            }
          }
          throw new DecodeError(`schema id ${schemaId} is unknown to the registry`, { cause: err });
        },
      );
      pending.set(schemaId, p);
    }
    return p;
  };

  const register = async (topic: string, schema: AvroSchemaJson): Promise<number> => {
    const subject = subjectFor(topic, schema);
    try {
      const { id } = await registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
        { subject, compatibility },
      );
      return id;
    } catch (err) {
      throw registryError(err, `registering ${subject}`);
    }
  };

  return {
    register,
    async encoder<T>(topic: string, schema: AvroSchemaJson): Promise<Encoder<T>> {
      const schemaId = await register(topic, schema);
      const type = avroTypeOf(schema);
      readers.set(schemaId, { name: fullName(schema), type });
      return avroEncoder<T>(schemaId, subjectFor(topic, schema), schema, type);
    },
    decodeCached(buffer) {
      const { schemaId, body } = unframe(buffer);
      const reader = readers.get(schemaId);
      return reader ? decodeWith(reader, schemaId, body) : undefined;
    },
    async decode(buffer) {
      const { schemaId, body } = unframe(buffer);
      const reader = readers.get(schemaId) ?? (await readerFor(schemaId));
      return decodeWith(reader, schemaId, body);
    },
  };
}
