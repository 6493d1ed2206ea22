import type * as Kafkajs from '@fraudlink/kafkajs';
import { installFixes } from './fixes/index.ts';
import { require } from './fixes/kafkajs-internals.ts';
import { fixState } from './fixes/state.ts';

/**
 * fraudlink's kafkajs: `@fraudlink/kafkajs` (an npm alias of kafkajs, fraudlink's own copy: see
 * README.md) loaded once, with the fixes of fixes/ (MANIFEST.md) installed before any of its
 * modules load. An application's own `kafkajs`, loaded before or after, is neither patched nor able
 * to pre-empt the fixes.
 */

installFixes();

const kafkajs = require('@fraudlink/kafkajs') as typeof Kafkajs;
export default kafkajs;

export {
  assignerWithGroupHooks,
  type FetchOffsetReader,
  type GroupJoinHooks,
  type KafkajsGroupState,
} from './fixes/group-join-hooks.ts';
export { PartitionBatchTooLargeError } from './fixes/oversized-partition-batch.ts';

/** The message lists of fraudlink's own sends, which fix 15 may refuse (producer.ts marks them). */
export const { cuttableMessages } = fixState;
