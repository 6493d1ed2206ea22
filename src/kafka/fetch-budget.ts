import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { kafkajsPath } from './kafkajs-path.ts';

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

// One per process, as the patch of kafkajs's Fetch it feeds: a second evaluation of this module
// (test runners) must find the scope the first one's patch opens.
const STORE = Symbol.for('fraudlink.kafkajs.fetchDecompressionBudget');
const shared = globalThis as Record<symbol, unknown>;
shared[STORE] ??= new AsyncLocalStorage<DecompressionBudget>();
const budgets = shared[STORE] as AsyncLocalStorage<DecompressionBudget>;

/** The budget of the fetch response being decoded; undefined outside one. */
export const fetchBudget = (): DecompressionBudget | undefined => budgets.getStore();

/** Runs `decode`, one fetch response's decoding, with a budget of `maxBytes` decompressed bytes. */
export function withDecompressionBudget<T>(maxBytes: number, decode: () => Promise<T>): Promise<T> {
  return budgets.run({ maxBytes, spent: 0 }, decode);
}

const require = createRequire(import.meta.url);
export const fetchModulePath = kafkajsPath('protocol/requests/fetch/index.js');

interface FetchResponse {
  decode(raw: Buffer): Promise<unknown>;
  parse(decoded: unknown): Promise<unknown>;
}
type FetchRequest = (args: { maxBytes?: number }) => { response: FetchResponse };
interface FetchDefinition {
  protocol(args: { version: number }): FetchRequest;
}

const INSTALLED = Symbol.for('fraudlink.kafkajs.fetchBudgetInstalled');

/**
 * Wraps kafkajs's Fetch requests (`protocol/requests/fetch`, whose `protocol` the broker looks up at
 * each fetch) so that each response decodes under a budget of its request's `maxBytes`, at most
 * `maxDecompressedBytes`.
 */
export function installFetchDecompressionBudget(maxDecompressedBytes: number): void {
  const Fetch = require(fetchModulePath) as FetchDefinition & { [INSTALLED]?: true };
  if (Fetch[INSTALLED]) return;
  Fetch[INSTALLED] = true;
  const protocol = Fetch.protocol;
  Fetch.protocol = (version) => {
    const request = protocol(version);
    if (!request) return request;
    return (args) => {
      const built = request(args);
      const maxBytes = Math.min(args.maxBytes ?? maxDecompressedBytes, maxDecompressedBytes);
      const { decode } = built.response;
      return {
        ...built,
        response: {
          ...built.response,
          decode: (raw: Buffer) => withDecompressionBudget(maxBytes, () => decode(raw)),
        },
      };
    };
  };
}
