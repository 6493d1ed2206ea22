export {
  clientConfigOf,
  createVerificationClient,
  type VerificationClient,
  type VerificationClientConfig,
} from './client.ts';
