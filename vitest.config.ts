import { defineConfig } from 'vitest/config';

// Unit tests use fakes and run anywhere; integration tests (`*.int.test.ts`) run against the real
// Kafka broker and schema registry that the global setup starts (or finds through KAFKA_BROKERS and
// SCHEMA_REGISTRY_URL).
export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.int.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          globalSetup: ['test/setup/stack.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Two cores: one integration file at a time, so neither the broker nor the processes under
          // test are starved (starved heartbeats mean rebalances, and flaky tests).
          maxWorkers: 1,
        },
      },
    ],
  },
});
