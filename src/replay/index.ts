export {
  type AlertChange,
  type AlertState,
  type ReplayConfig,
  type ReplayOptions,
  type ReplayResult,
  replayAlerts,
} from './replay.ts';
