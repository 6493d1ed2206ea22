/**
 * Where one Kafka session of the verifier (session.ts) stands:
 *
 * - `joining`: its producers are open and its consumer joins the group for the first time;
 * - `joined`: the consumer has its assignment and the session serves requests;
 * - `rejoining`: the consumer crashed and kafkajs restarts it, to join again;
 * - `stopping`: stop() has begun (or the start failed): nothing more is handed out, what is in
 *   flight drains;
 * - `failed`: a failure ended it: nothing more is handed out or committed;
 * - `leaving`: its consumer is closing, then its producers; a failure may still come meanwhile.
 *
 * The moves:
 *
 *   joining, rejoining ──assigned──▶ joined ──consumer crashed──▶ rejoining
 *   joining, joined, rejoining ──stop()──▶ stopping
 *   any state but failed ──fail──▶ failed (or leaving, failed)
 *   stopping, failed ──closing the clients──▶ leaving
 *
 * Once the session stops handing out, an assignment or a crash no longer moves it, though it still
 * changes the member the requests in hand were consumed as.
 */
export type SessionState =
  | { name: 'joining' }
  | { name: 'joined' }
  | { name: 'rejoining' }
  | { name: 'stopping' }
  | { name: 'failed' }
  | { name: 'leaving'; failed: boolean; closed: Promise<void> };

/** What the verifier reads of a session's state: readiness, and the restart backoff. */
export interface SessionView {
  readonly joined: boolean;
  /** Its consumer crashed and kafkajs is restarting it. */
  readonly rejoining: boolean;
  /** When it first joined its group, or undefined while it has not. */
  readonly joinedAt: number | undefined;
}

/** The state of one session, with the moves between states as methods. */
export class SessionLifecycle implements SessionView {
  #state: SessionState = { name: 'joining' };
  /**
   * The member id that the requests in hand were consumed as; undefined once they are dropped for
   * good (a crash, or this member cut off from the group).
   */
  #member: string | undefined;
  #joinedAt: number | undefined;

  get state(): Readonly<SessionState> {
    return this.#state;
  }

  /** Requests are handed out: neither stop() nor a failure has begun. */
  get handsOut(): boolean {
    const { name } = this.#state;
    return name === 'joining' || name === 'joined' || name === 'rejoining';
  }

  get joined(): boolean {
    return this.#state.name === 'joined';
  }

  /** Its consumer crashed and kafkajs is restarting it (it rejoins by itself). */
  get rejoining(): boolean {
    return this.#state.name === 'rejoining';
  }

  /** Its consumer is closing: it leaves the group, also after a join it finishes meanwhile. */
  get leaving(): boolean {
    return this.#state.name === 'leaving';
  }

  get hasFailed(): boolean {
    return this.#state.name === 'failed' || (this.#state.name === 'leaving' && this.#state.failed);
  }

  /** When the session first joined its group, or undefined while it has not. */
  get joinedAt(): number | undefined {
    return this.#joinedAt;
  }

  get member(): string | undefined {
    return this.#member;
  }

  /** The consumer got its assignment as `memberId`, at `at`; the requests in hand are its own now. */
  assigned(memberId: string | undefined, at: number): void {
    this.#member = memberId;
    this.#joinedAt ??= at;
    if (this.handsOut) this.#state = { name: 'joined' };
  }

  /** The consumer crashed and kafkajs restarts it: what it had in hand is dropped. */
  consumerRestarting(): void {
    this.#member = undefined;
    if (this.handsOut) this.#state = { name: 'rejoining' };
  }

  /** What was in hand is dropped: no member of the group answers for it any more. */
  droppedInHand(): void {
    this.#member = undefined;
  }

  /** stop() has begun, or the start failed: nothing more is handed out. */
  stop(): void {
    if (this.handsOut) this.#state = { name: 'stopping' };
  }

  /** A failure ends the session; false when it had failed already (the first failure counts). */
  fail(): boolean {
    if (this.hasFailed) return false;
    this.#state = this.#state.name === 'leaving' ? { ...this.#state, failed: true } : { name: 'failed' };
    return true;
  }

  /**
   * Closes the clients with `close`, once: a second call (stop() after a failure, or the other way
   * round) gets the same promise.
   */
  leave(close: () => Promise<void>): Promise<void> {
    if (this.#state.name === 'leaving') return this.#state.closed;
    const closing = Promise.withResolvers<void>();
    this.#state = { name: 'leaving', failed: this.hasFailed, closed: closing.promise };
    close().then(closing.resolve, closing.reject);
    return closing.promise;
  }
}
