import { flexibleRequest, NO_TAGS, type ProtocolRequest } from './flexible-request.ts';

/**
 * EndTxn v5: ends the transaction and bumps the producer epoch (a new producer id when the epoch
 * is exhausted), which the response carries.
 */

export interface EndTxnV5Result {
  throttleTime: number;
  clientSideThrottleTime: number;
  errorCode: number;
  producerId: string;
  producerEpoch: number;
}

export function endTxnV5(args: {
  transactionalId: string;
  producerId: unknown;
  producerEpoch: number;
  transactionResult: boolean;
}): ProtocolRequest {
  return flexibleRequest<EndTxnV5Result>({
    apiName: 'EndTxn',
    apiVersion: 5,
    body: (e) =>
      e
        .writeUVarIntString(args.transactionalId)
        .writeInt64(args.producerId)
        .writeInt16(args.producerEpoch)
        .writeBoolean(args.transactionResult)
        .writeUVarInt(NO_TAGS),
    read: (d) => ({
      throttleTime: 0,
      clientSideThrottleTime: d.readInt32(),
      errorCode: d.readInt16(),
      producerId: d.readInt64().toString(),
      producerEpoch: d.readInt16(),
    }),
    errorCodes: (result) => [result.errorCode],
  });
}
