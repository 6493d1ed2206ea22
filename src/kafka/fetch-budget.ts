import { fixState } from './fixes/state.ts';

/**
 * A decompression budget per fetch response (codecs.ts spends it). kafkajs decodes a fetch response
 * batch by batch, each compressed one through its codec, with nothing to tell the codec which
 * response the batch came in: a bound per batch let one fetch of many small compressed batches
 * ("bombs", a few KB each on disk) decompress them all at once (16 ZSTD batches of 60 MiB of
 * zeros: a reader at 1.1 GB). The decoding of each fetch response now runs in a scope of its own
 * (AsyncLocalStorage: kafkajs decodes the responses of several brokers at once, interleaved at each
 * batch's await), whose budget is the fetch's `maxBytes`, capped by the codecs' bound.
 */
export interface DecompressionBudget {
  /** What the response's compressed batches may decompress to, together. */
  readonly maxBytes: number;
  /** What they have decompressed to so far. */
  spent: number;
}

// One per process (fixes/state.ts), as the patch of kafkajs's Fetch that opens each scope
// (fixes/compression-codecs.ts).
const budgets = fixState.fetchBudgets;

/** The budget of the fetch response being decoded; undefined outside one. */
export const fetchBudget = (): DecompressionBudget | undefined => budgets.getStore();

/** Runs `decode`, one fetch response's decoding, with a budget of `maxBytes` decompressed bytes. */
export function withDecompressionBudget<T>(maxBytes: number, decode: () => Promise<T>): Promise<T> {
  return budgets.run({ maxBytes, spent: 0 }, decode);
}
