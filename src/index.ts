// The library surface of the fraudlink package.

export * from './errors.ts';
export {
  type AlertChange,
  type AlertState,
  type ReplayConfig,
  type ReplayOptions,
  type ReplayResult,
  replayAlerts,
} from './replay/index.ts';
export {
  createVerificationClient,
  type VerificationClient,
  type VerificationClientConfig,
  type VerificationResult,
} from './verifier/index.ts';
