import { FencedError, KafkaError } from '../errors.ts';

const FENCING_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'INVALID_PRODUCER_ID_MAPPING']);

interface KafkajsLike {
  name?: string;
  type?: string;
  code?: number;
  retriable?: boolean;
  message?: string;
  cause?: unknown;
  originalError?: unknown;
}

function* chain(err: unknown): Generator<KafkajsLike> {
  const seen = new Set<unknown>();
  let current: unknown = err;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    yield current as KafkajsLike;
    const e = current as KafkajsLike;
    current = e.originalError ?? e.cause;
  }
}

export function isFencing(err: unknown): boolean {
  for (const e of chain(err)) {
    if ((e.type && FENCING_TYPES.has(e.type)) || e.code === 90 || e.code === 47) return true;
  }
  return false;
}

/** kafkajs errors into the project's model: fencing is FencedError, the rest KafkaError keeping kafkajs's verdict. */
export function toKafkaError(err: unknown, what: string): Error {
  if (err instanceof KafkaError || err instanceof FencedError) return err;
  if (isFencing(err)) {
    return new FencedError(`${what}: another producer with the same transactional id took over`, {
      cause: err,
    });
  }
  let retriable = false;
  for (const e of chain(err)) {
    if (
      e.retriable === true ||
      e.name === 'KafkaJSConnectionError' ||
      e.name === 'KafkaJSRequestTimeoutError'
    ) {
      retriable = true;
      break;
    }
    if (e.name === 'KafkaJSNumberOfRetriesExceeded') retriable = true;
  }
  const message = err instanceof Error ? err.message : String(err);
  return new KafkaError(`${what}: ${message}`, { retriable, cause: err });
}
