import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRetriable, SchemaRegistryError } from '../../src/errors.ts';
import { createSchemaRegistry } from '../../src/kafka/index.ts';
import { loadSchema, SchemaNames } from '../../src/schemas.ts';
import { ALERT_UPSERTED } from '../helpers/registry.ts';
import { stackEnv, uniqueName } from '../helpers/stack.ts';
import { testPki, tlsProxy } from '../helpers/tls.ts';

let pki: Awaited<ReturnType<typeof testPki>>;
beforeAll(async () => {
  pki = await testPki();
});
afterAll(() => pki.remove());

const event = ALERT_UPSERTED;

// The shared Apicurio behind a TLS front (test/helpers/tls.ts): TLS ends at the front, whose
// certificate a test CA signed, and the HTTP goes on to the registry as it is.
describe('schema registry over TLS', () => {
  it('registers, encodes and decodes through a registry whose certificate SCHEMA_REGISTRY_TLS_CA signed', async () => {
    const url = await tlsProxy(stackEnv().SCHEMA_REGISTRY_URL, pki.server);
    const registry = createSchemaRegistry({ url, tls: { caFile: pki.files.ca } });
    const encoder = await registry.encoder(uniqueName('alerts'), loadSchema(SchemaNames.AlertUpserted));
    const decoded = await registry.decode(encoder.encode(event));
    expect(decoded.value).toEqual(event);
  });

  it('fails with a SchemaRegistryError, not retried, naming the certificate and SCHEMA_REGISTRY_TLS_CA, when another CA signed it', async () => {
    const url = await tlsProxy(stackEnv().SCHEMA_REGISTRY_URL, pki.server);
    const registry = createSchemaRegistry({ url, tls: { caFile: pki.files.otherCa } });
    const err = await registry
      .register(uniqueName('alerts'), loadSchema(SchemaNames.AlertUpserted))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(false);
    expect((err as Error).message).toMatch(
      /registering .* failed: the registry's TLS certificate is not trusted \(.*unable to verify the first certificate.*SCHEMA_REGISTRY_TLS_CA must name the CA that signed it/,
    );
  });

  it('with mutual TLS required, works with SCHEMA_REGISTRY_TLS_CERT and _KEY, and fails clearly without them', async () => {
    const url = await tlsProxy(stackEnv().SCHEMA_REGISTRY_URL, pki.server, pki.ca.cert);
    const topic = uniqueName('alerts');
    const withCert = createSchemaRegistry({
      url,
      tls: { caFile: pki.files.ca, certFile: pki.files.clientCert, keyFile: pki.files.clientKey },
    });
    expect(await withCert.register(topic, loadSchema(SchemaNames.AlertUpserted))).toBeGreaterThan(0);
    const without = createSchemaRegistry({ url, tls: { caFile: pki.files.ca } });
    const err = await without.register(topic, loadSchema(SchemaNames.AlertUpserted)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(isRetriable(err)).toBe(false);
    expect((err as Error).message).toMatch(
      /the registry refused the TLS client certificate, or its absence \(.*alert certificate required.*SCHEMA_REGISTRY_TLS_CERT and SCHEMA_REGISTRY_TLS_KEY must name one it accepts/,
    );
  });
});
