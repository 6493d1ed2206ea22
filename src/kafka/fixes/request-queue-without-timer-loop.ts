import { requestQueueModulePath, require } from './kafkajs-internals.ts';
import { installOnce, type KafkajsFixState } from './state.ts';

/**
 * Fix 10. A 1 ms timer loop on every connection (kafkajs issues #1556 and #1704, unmerged PR #1667).
 *
 * After every response a connection's RequestQueue schedules `checkPendingRequests`, pending
 * requests or not, with a delay of `throttledUntil - Date.now()`: about minus the current epoch
 * when not throttled, which Node runs as 1 ms; that check schedules the next one, and so on for the
 * life of the connection. Measured on an idle client with two connections: ~1,800 checks and ~35 ms
 * of CPU a second, against none and ~2–4 ms with the fix; an idle `fraudlink verifier`, 41–42
 * against 12–13 ms a second.
 *
 * The replacement keeps a check scheduled only while a request is pending: at the end of the
 * client-side throttle, or after the original's 10 ms when the request waits for a free in-flight
 * slot (a response checks the queue at once anyway).
 *
 * Test: test/kafka/kafkajs-fixes.test.ts, "kafkajs request queue without a timer loop".
 */

/** kafkajs's per-connection request queue: only the members the scheduling fix touches. */
interface RequestQueueInstance {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** kafkajs's own wait before it checks again for a request that waits for an in-flight slot. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

export function install(state: KafkajsFixState): void {
  installOnce(state, 'request-queue-without-timer-loop', () => {
    const RequestQueue = require(requestQueueModulePath) as { prototype: RequestQueueInstance };
    state.originals.scheduleCheckPendingRequests = RequestQueue.prototype.scheduleCheckPendingRequests;
    RequestQueue.prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(
      this: RequestQueueInstance,
    ) {
      if (this.pending.length === 0) {
        // Nothing left to send: a check scheduled for a request sent since would only run for nothing.
        if (this.throttleCheckTimeoutId) clearTimeout(this.throttleCheckTimeoutId);
        this.throttleCheckTimeoutId = null;
        return;
      }
      if (this.throttleCheckTimeoutId) return;
      const untilUnthrottled = this.throttledUntil - Date.now();
      this.throttleCheckTimeoutId = setTimeout(
        () => {
          this.throttleCheckTimeoutId = null;
          this.checkPendingRequests();
        },
        untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS,
      );
    };
  });
}
