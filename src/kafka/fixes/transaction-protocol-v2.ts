import { createEosManager, eosManagerModulePath } from '../eos-manager.ts';
import { type ApiVersionsV3, apiVersionsV3 } from '../protocol/api-versions-v3.ts';
import { type EndTxnV5Result, endTxnV5 } from '../protocol/end-txn-v5.ts';
import type { ProtocolError, ProtocolRequest, Versions } from '../protocol/flexible-request.ts';
import { type ProduceArgs, produceV12 } from '../protocol/produce-v12.ts';
import { type TxnOffsetCommitResult, txnOffsetCommitFlexible } from '../protocol/txn-offset-commit.ts';
import { transactionV2For, withFinalizedFeatures } from '../transaction-v2.ts';
import { brokerModulePath, require, senderOf, swapModule } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 11. Kafka's transaction protocol v2 (KIP-890 part 2, Kafka 4.0+) for kafkajs, which speaks
 * only v1.
 *
 * On v1 a transaction costs the producer five requests in a row: AddPartitionsToTxn, Produce,
 * AddOffsetsToTxn, TxnOffsetCommit, EndTxn. On v2 the broker enrols a partition in the transaction
 * when a Produce (v12+) or a TxnOffsetCommit (v5+) reaches it, so the two Add requests go, and
 * EndTxn (v5+) ends the transaction with the producer epoch one higher, which its response
 * carries: three requests. That is what Kafka's Java client does since 4.0 when the cluster
 * finalizes `transaction.version` 2 (the default of a cluster formatted by 4.0 or later).
 *
 * kafkajs learns no features from its ApiVersions v2, so its Broker asks ApiVersions v3
 * (protocol/api-versions-v3.ts) first, and keeps the finalized feature levels with the versions
 * object it hands to every broker (`finalizedFeatureLevel`, transaction-v2.ts). A transactional
 * Produce goes out as v12 (protocol/produce-v12.ts) where the cluster finalizes
 * `transaction.version` 2 and the broker offers every v2 request (`transactionV2Available`); every
 * other request is kafkajs's own. The Broker also gets `endTxnV5` and `txnOffsetCommitFlexible`
 * (protocol/end-txn-v5.ts, protocol/txn-offset-commit.ts).
 *
 * kafkajs's transaction manager is swapped for eos-manager.ts, which takes v2 per transaction under
 * the same condition, decided at the transaction's first request and kept to its end; otherwise it
 * is kafkajs's v1 flow, with the retries and member identity that file describes.
 *
 * Test: test/kafka/transaction-v2.test.ts, "kafkajs's Broker with the v2 requests installed" ›
 * "asks ApiVersions v3 and keeps the finalized features with the versions" (and the rest of that
 * file); test/kafka/transactions.int.test.ts against the broker.
 */

interface BrokerInstance {
  versions: Versions | null;
  connectionPool: { connectionTimeout: number };
  produce(args: ProduceArgs): Promise<unknown>;
}
interface BrokerClass {
  prototype: BrokerInstance & {
    apiVersions(this: BrokerInstance): Promise<Versions>;
    endTxnV5(this: BrokerInstance, args: Parameters<typeof endTxnV5>[0]): Promise<EndTxnV5Result>;
    txnOffsetCommitFlexible(
      this: BrokerInstance,
      args: Parameters<typeof txnOffsetCommitFlexible>[0],
    ): Promise<TxnOffsetCommitResult>;
  };
}

function installBrokerRequests(): void {
  const Broker = require(brokerModulePath) as BrokerClass;
  const send = senderOf<ProtocolRequest>(Broker);
  const { version: kafkajsVersion } = require('@fraudlink/kafkajs/package.json') as { version: string };
  const originalApiVersions = Broker.prototype.apiVersions;
  const originalProduce = Broker.prototype.produce;

  // ApiVersions v3 first; a broker that refuses it (older than 2.4) gets kafkajs's own negotiation.
  Broker.prototype.apiVersions = async function apiVersions() {
    let response: ApiVersionsV3;
    try {
      response = (await send(this, {
        ...apiVersionsV3(kafkajsVersion),
        requestTimeout: this.connectionPool.connectionTimeout,
        // A refusal only sends us to the older versions, as kafkajs's own v1 and v2 do.
        logResponseError: false,
      })) as ApiVersionsV3;
    } catch (e) {
      if ((e as ProtocolError).type !== 'UNSUPPORTED_VERSION') throw e;
      return originalApiVersions.call(this);
    }
    const versions: Versions = {};
    for (const { apiKey, minVersion, maxVersion } of response.apiVersions) {
      versions[apiKey] = { minVersion, maxVersion };
    }
    return withFinalizedFeatures(versions, response.finalizedFeatures);
  };

  Broker.prototype.produce = function produce(this: BrokerInstance, args: ProduceArgs) {
    if (!args.transactionalId || !transactionV2For(args.transactionalId, this.versions)) {
      return originalProduce.call(this, args);
    }
    return send(this, produceV12({ ...args, acks: args.acks ?? -1, timeout: args.timeout ?? 30_000 }));
  };

  Broker.prototype.endTxnV5 = function (args) {
    return send(this, endTxnV5(args)) as Promise<EndTxnV5Result>;
  };
  Broker.prototype.txnOffsetCommitFlexible = function (args) {
    return send(this, txnOffsetCommitFlexible(args)) as Promise<TxnOffsetCommitResult>;
  };
}

export function install(state: KafkajsFixState): void {
  installOnce(state, 'transaction-protocol-v2', () => {
    installBrokerRequests();
    require(eosManagerModulePath);
    swapModule(eosManagerModulePath, createEosManager);
  });
}
