export { createApiClient, isDotSegment, retryDefaults } from './client.ts';
export { ExportCursorCheck } from './export-cursor.ts';
export { errorForStatus } from './http-errors.ts';
export { checkExportEnvelope } from './schemas.ts';
export type * from './types.ts';
