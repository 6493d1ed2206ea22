import pino, { type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/** Every place a secret could sit in a logged object; pino replaces it before serialising. */
export const redactedPaths = [
  'apiKey',
  '*.apiKey',
  '*.*.apiKey',
  'key',
  'api.key',
  '*.api.key',
  'password',
  '*.password',
  '*.*.password',
  '*.*.*.password',
  '*.*.api.key',
  '*.*.tls.key',
  'sasl.password',
  '*.sasl.password',
  'clientSecret',
  '*.clientSecret',
  '*.*.clientSecret',
  '*.*.*.clientSecret',
  'privateKey',
  '*.privateKey',
  'tls.key',
  '*.tls.key',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  'API_KEY',
  '*.API_KEY',
  'apiKeys',
  '*.apiKeys',
  'TABLE_API_KEYS',
  '*.TABLE_API_KEYS',
  'KAFKA_SASL_PASSWORD',
  '*.KAFKA_SASL_PASSWORD',
  'KAFKA_SASL_OAUTH_CLIENT_SECRET',
  '*.KAFKA_SASL_OAUTH_CLIENT_SECRET',
  'SCHEMA_REGISTRY_PASSWORD',
  '*.SCHEMA_REGISTRY_PASSWORD',
];

/**
 * `apiKey` names the upstream key (a string) in fraudlink's options, but also kafkajs's protocol
 * field, the request type (an int16, `apiKey: 0` for Produce) in its debug lines and errors. That
 * one is no secret, and without it a line no longer says which request it is about. Anything else
 * under `apiKey` is redacted, a number past the int16 range too (a key of digits given as a number
 * from code). pino names no parent under a `*` path, so the range is all that tells them apart.
 */
function censor(value: unknown, path: string[]): unknown {
  const requestType = Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0x7fff;
  return path.at(-1) === 'apiKey' && requestType ? value : '[redacted]';
}

export interface LoggerSetup {
  level?: string;
  /** Where lines go; stderr (fd 2) unless a test passes its own stream. */
  destination?: pino.DestinationStream;
}

/** The one root logger of a process: JSON lines on stderr, secrets redacted, errors under `err`. */
export function createLogger(setup: LoggerSetup = {}): Logger {
  const options: LoggerOptions = {
    level: setup.level ?? 'info',
    base: { service: 'fraudlink' },
    redact: { paths: redactedPaths, censor },
    serializers: { err: pino.stdSerializers.err },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return pino(options, setup.destination ?? pino.destination({ dest: 2, sync: true }));
}

/** A logger that writes nothing, for library callers that pass none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * Masks an IBAN for logs: country code and last four characters, e.g. `FR…0189`; spaces and dashes
 * of a print form (`FR76-3000-…`) are dropped first.
 */
export function maskIban(iban: unknown): string {
  if (typeof iban !== 'string') return '<none>';
  const compact = iban.replace(/[\s-]+/g, '').toUpperCase();
  if (compact.length <= 6) return `${compact.slice(0, 2)}…`;
  return `${compact.slice(0, 2)}…${compact.slice(-4)}`;
}

/** How many characters of a client-controlled string (an id, a topic name, a message) a log line keeps. */
export const LOG_CLIP_CHARS = 128;

/**
 * A client-controlled string cut for a log line or an error message: its first `max` characters and
 * "…(N more)", so that one request cannot make a line of megabytes.
 */
export function clip(text: string, max = LOG_CLIP_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(${text.length - max} more)`;
}
