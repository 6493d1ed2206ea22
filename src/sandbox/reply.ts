/** A response before it is written, so faults (resets) can act on any of them alike. */
export interface Reply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

export const json = (status: number, value: unknown, headers?: Record<string, string>): Reply => ({
  status,
  body: JSON.stringify(value),
  ...(headers && { headers }),
});

/** Every error body is `{"code","message"}` (docs/contract.md). */
export const problem = (status: number, code: string, message: string, headers?: Record<string, string>) =>
  json(status, { code, message }, headers);
