import {
  apiKeys,
  Decoder,
  Encoder,
  failOn,
  NO_TAGS,
  type ProtocolRequest,
  readTags,
} from './flexible-request.ts';

/**
 * ApiVersions v3: also the cluster's finalized features.
 */

export interface ApiVersionsV3 {
  errorCode: number;
  apiVersions: { apiKey: number; minVersion: number; maxVersion: number }[];
  throttleTime: number;
  clientSideThrottleTime: number;
  finalizedFeatures: Map<string, number>;
}

const FINALIZED_FEATURES_TAG = 2;

export function apiVersionsV3(clientSoftwareVersion: string): ProtocolRequest {
  return {
    request: {
      apiKey: apiKeys.ApiVersions as number,
      apiVersion: 3,
      apiName: 'ApiVersions',
      encode: () =>
        new (Encoder())()
          .writeUVarInt(NO_TAGS)
          .writeUVarIntString('kafkajs')
          .writeUVarIntString(clientSoftwareVersion)
          .writeUVarInt(NO_TAGS),
    },
    response: {
      // ApiVersions responses keep the v0 header (no tagged fields), and a broker that refuses the
      // version answers in v0's body: only the error code is read then.
      async decode(raw) {
        const d = new (Decoder())(raw);
        const errorCode = d.readInt16();
        const result: ApiVersionsV3 = {
          errorCode,
          apiVersions: [],
          throttleTime: 0,
          clientSideThrottleTime: 0,
          finalizedFeatures: new Map(),
        };
        if (errorCode !== 0) return result;
        result.apiVersions =
          d.readUVarIntArray((k) => {
            const entry = { apiKey: k.readInt16(), minVersion: k.readInt16(), maxVersion: k.readInt16() };
            readTags(k);
            return entry;
          }) ?? [];
        result.clientSideThrottleTime = d.readInt32();
        readTags(d, (tag, field) => {
          if (tag !== FINALIZED_FEATURES_TAG) return;
          field.readUVarIntArray((f) => {
            const name = f.readUVarIntString();
            const maxVersionLevel = f.readInt16();
            f.readInt16(); // min version level
            readTags(f);
            if (name !== null) result.finalizedFeatures.set(name, maxVersionLevel);
          });
        });
        return result;
      },
      async parse(data) {
        failOn((data as ApiVersionsV3).errorCode);
        return data;
      },
    },
  };
}
