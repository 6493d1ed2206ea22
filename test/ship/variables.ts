import {
  alertsEnv,
  apiEnv,
  commonEnv,
  connectorEnv,
  kafkaEnv,
  registryEnv,
  tableEnv,
  verifierEnv,
} from '../../src/config/schema.ts';

/** Every environment variable the configuration defines, which the guide and the chart must cover. */
export const configVariables = [
  apiEnv,
  kafkaEnv,
  registryEnv,
  alertsEnv,
  connectorEnv,
  verifierEnv,
  tableEnv,
  commonEnv,
].flatMap(Object.keys);
