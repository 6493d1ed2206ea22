// The library surface of the fraudlink package.

export * from './errors.ts';
// replayAlerts and its types: the replay folder's index is its public surface.
export * from './replay/index.ts';
export {
  createVerificationClient,
  type VerificationClient,
  type VerificationClientConfig,
} from './requester/index.ts';
export {
  type AlertList,
  type AlertTable,
  type AlertTableConfig,
  type AlertTableOptions,
  type ListQuery,
  type LookupResult,
  openAlertTable,
  type RunningTableService,
  startTableService,
  type TableStatus,
} from './table/index.ts';
export type { VerificationResult } from './verifier/index.ts';
