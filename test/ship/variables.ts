import {
  alertsEnv,
  apiEnv,
  commonEnv,
  connectorEnv,
  kafkaEnv,
  registryEnv,
  sandboxUpstreamEnv,
  tableEnv,
  verifierEnv,
} from '../../src/config/schema.ts';

/** Every environment variable the configuration defines, which the guide and the chart must cover. */
export const configVariables = [
  apiEnv,
  sandboxUpstreamEnv,
  kafkaEnv,
  registryEnv,
  alertsEnv,
  connectorEnv,
  verifierEnv,
  tableEnv,
  commonEnv,
].flatMap(Object.keys);
