import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * The file at `path` under the src/ of fraudlink's own kafkajs (`@fraudlink/kafkajs`, an npm alias of
 * kafkajs: src/kafka/README.md), for the modules this layer patches or reads.
 */
export const kafkajsPath = (path: string): string => require.resolve(`@fraudlink/kafkajs/src/${path}`);
