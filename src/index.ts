// The library surface of the fraudlink package.

export * from './errors.ts';
export {
  createVerificationClient,
  type VerificationClient,
  type VerificationClientConfig,
  type VerificationResult,
} from './verifier/index.ts';
