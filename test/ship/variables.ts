import {
  alertsEnv,
  apiEnv,
  commonEnv,
  connectorEnv,
  kafkaEnv,
  registryEnv,
  sandboxUpstreamEnv,
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
  commonEnv,
].flatMap(Object.keys);
