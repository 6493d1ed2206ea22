/** One request as the sandbox saw it; tests read these to prove what a client did. */
export interface SandboxRequest {
  at: number;
  method: string;
  /** Path below the base URL, e.g. /sharing/v1/alerts/export. */
  path: string;
  query: Record<string, string>;
  /** Institution id of the calling tenant (PSP001 for the first API key), when the key was known. */
  tenant?: string;
  /** The status answered, or -1 when a fault cut the connection after the headers. */
  status: number;
}

/** A bounded ring of the last `capacity` requests. */
export class RequestLog {
  readonly #items: (SandboxRequest | undefined)[];
  #next = 0;
  #count = 0;

  constructor(capacity: number) {
    this.#items = new Array(capacity);
  }

  add(entry: SandboxRequest): void {
    this.#items[this.#next] = entry;
    this.#next = (this.#next + 1) % this.#items.length;
    this.#count = Math.min(this.#count + 1, this.#items.length);
  }

  /** Oldest first. */
  entries(): SandboxRequest[] {
    const start = (this.#next - this.#count + this.#items.length) % this.#items.length;
    return Array.from(
      { length: this.#count },
      (_, k) => this.#items[(start + k) % this.#items.length] as SandboxRequest,
    );
  }

  clear(): void {
    this.#items.fill(undefined);
    this.#next = 0;
    this.#count = 0;
  }
}
