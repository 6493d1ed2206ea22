import { unlessAborted } from '../retry.ts';

/**
 * `connecting` (a kafkajs client's connect, or a start that begins with it), or AbortedError (`what`
 * aborted) as soon as `signal` aborts. kafkajs takes no signal and retries a broker it cannot reach
 * for tens of seconds: on abort the client is disconnected at once, closing what it has open, and
 * again once `connecting` settles, should its retries have connected it after all.
 */
export async function connectedUnlessAborted<T>(
  connecting: Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
  disconnect: () => Promise<unknown>,
): Promise<T> {
  try {
    return await unlessAborted(connecting, signal, what);
  } catch (err) {
    if (signal?.aborted) {
      void connecting.then(disconnect, disconnect).catch(() => {});
      await disconnect().catch(() => {});
    }
    throw err;
  }
}
