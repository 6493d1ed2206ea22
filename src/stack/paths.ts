import { fileURLToPath } from 'node:url';

/** The repository root, two levels above src/stack/ (the stack runs from src/, not from dist/ or the package). */
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The one git-ignored folder holding downloads, extracted archives and running stacks' data. */
export function cacheDir(): string {
  return fileURLToPath(new URL('../../.cache/stack/', import.meta.url));
}

export const KAFKA_VERSION = '4.3.1';
export const LOG4J_VERSION = '2.24.3';
export const APICURIO_VERSION = '3.3.3';
/** The last Apicurio line that runs on Java 17, for machines without a Java 21+ JDK. */
export const APICURIO_JAVA17_VERSION = '3.0.9';
