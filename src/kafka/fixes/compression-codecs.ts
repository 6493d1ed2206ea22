import type * as Kafkajs from '@fraudlink/kafkajs';
import { installCodecs, MAX_DECOMPRESSED_BYTES } from '../codecs.ts';
import { withDecompressionBudget } from '../fetch-budget.ts';
import { kafkajsPath } from '../kafkajs-path.ts';
import { require } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 16. Compressed record batches.
 *
 * kafkajs reads only gzip's: a consumer crashed on the first Snappy, LZ4 or ZSTD batch it fetched,
 * whichever producer or topic setting compressed it ("LZ4 compression not implemented"). Its gzip
 * codec decompresses asynchronously, in chunks: replay ran at about two thirds of the rate
 * (226–286k against 352–494k events/s). And a batch's codec cannot tell which fetch response the
 * batch came in, so one fetch of many small compressed "bombs" decompressed them all at once.
 *
 * Kafka's four codecs (codecs.ts) go into kafkajs's `CompressionCodecs` table, gzip's in place of
 * its own, and each fetch response decodes under a budget of decompressed bytes (fetch-budget.ts:
 * the request's `maxBytes`, at most `MAX_DECOMPRESSED_BYTES`), which the codecs spend.
 *
 * Facts the budget relies on. A fetch's first compressed batch may take the whole per-batch bound
 * (a broker returns a fetch's first batch whatever its `maxBytes`); a later one that would pass
 * what the budget has left is not decompressed, and the response ends before it, as a fetch the
 * broker cut at `maxBytes` ends (kafkajs's partial-batch path): it comes first in the next fetch.
 * Failing the fetch there instead would stop readers of ordinary compressed topics: a fetch takes
 * up to 16 MiB of a partition compressed, 64 MiB at 4:1, and a 200,000-record ZSTD topic (113 MiB
 * of repetitive JSON, 2.4 MiB on disk) reads in two `readTopic` fetches. Without a budget, 16 ZSTD
 * batches of 60 MiB of zeros (a few KB each on disk) take a reader from 114 to 1,186 MiB of RSS in
 * one fetch; with it they read in 16 fetches, RSS 484 MiB at most. The budget goes to partitions
 * in the response's order, which kafkajs's `Broker.fetch` shuffles at every fetch (KIP-74): under a
 * compressed backlog that passes the budget, a partition with little to read behind N−1 with a
 * backlog comes first in one fetch in N on average. An LZ4 frame is bounded by its blocks: a
 * stored block's size, the frame's block maximum for a compressed one (64 KiB in Java's frames;
 * lz4-napi's take 64 KiB, 256 KiB, or 4 MiB past 256 KiB of data, so a 64 MiB budget may end up to
 * 4 MiB early). The send cut (fix 15) and the verifier's DLQ check count records uncompressed.
 *
 * Test: test/kafka/codecs.test.ts, "a fetch response's decompression budget" › "keeps the budgets
 * of fetch responses decoded at once apart (two brokers answering)" (the budget itself);
 * test/kafka/unreadable-batches.test.ts › "decodes a readable compressed batch as kafkajs does"
 * fails without the codecs. Against the broker, test/kafka/codecs.int.test.ts: a topic per codec
 * whose `compression.type` makes the broker recompress (Java's codecs) read back whole, batches
 * compressed here with each codec accepted and read back, and six 400 KB ZSTD batches read two a
 * fetch by a consumer with `maxBytes` 1 MiB.
 */

const compressionModulePath = kafkajsPath('protocol/message/compression/index.js');
const fetchModulePath = kafkajsPath('protocol/requests/fetch/index.js');

interface FetchResponse {
  decode(raw: Buffer): Promise<unknown>;
  parse(decoded: unknown): Promise<unknown>;
}
type FetchRequest = (args: { maxBytes?: number }) => { response: FetchResponse };
interface FetchDefinition {
  protocol(args: { version: number }): FetchRequest;
}

/**
 * Wraps kafkajs's Fetch requests (`protocol/requests/fetch`, whose `protocol` the broker looks up at
 * each fetch) so that each response decodes under a budget of its request's `maxBytes`, at most
 * `maxDecompressedBytes`.
 */
function installFetchDecompressionBudget(maxDecompressedBytes: number): void {
  const Fetch = require(fetchModulePath) as FetchDefinition;
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

export function install(state: KafkajsFixState): void {
  installOnce(state, 'compression-codecs', () => {
    installFetchDecompressionBudget(MAX_DECOMPRESSED_BYTES);
    // The table kafkajs exports as `CompressionCodecs` and `CompressionTypes`.
    const { Codecs, Types } = require(compressionModulePath) as {
      Codecs: typeof Kafkajs.CompressionCodecs;
      Types: typeof Kafkajs.CompressionTypes;
    };
    installCodecs({ CompressionCodecs: Codecs, CompressionTypes: Types });
  });
}
