export { createApiClient, isDotSegment, retryDefaults } from './client.ts';
export { caughtUp, ExportCursorCheck, pageIdentity } from './export-cursor.ts';
export { errorForStatus } from './http-errors.ts';
export { checkExportEnvelope } from './schemas.ts';
export type * from './types.ts';
