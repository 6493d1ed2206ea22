import type { IncomingMessage } from 'node:http';

/** A request refused while it is read or checked: answered `status` with `{"code","message"}`. */
export class HttpRefusal extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * The request's body, up to `limit` bytes, or `tooLarge` (a 413). One declared larger is refused
 * unread; one sent chunked, once it passes the limit. The rest is left unread, neither drained nor
 * destroyed under the 413 still to be written: that answer must close the connection, which can
 * then serve nothing else. Memory stays bounded by `limit` whatever the client sends.
 */
export function readBody(req: IncomingMessage, limit: number, tooLarge: HttpRefusal): Promise<Buffer> {
  if (Number(req.headers['content-length']) > limit) return Promise.reject(tooLarge);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else {
        req.off('data', onData).pause();
        reject(tooLarge);
      }
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}
