export {
  type ApiClient,
  type ApiClientOptions,
  type CallOptions,
  createApiClient,
  exportEnvelope,
} from './client.ts';
export type * from './schemas.ts';
export { nameMatchCodes } from './schemas.ts';
