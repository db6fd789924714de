import type { LogRecord } from "../event-log.ts";

/**
 * Turns the consumer's push (kafkajs calls us per fetched batch) into the pull
 * an async iterator needs, with a bound: once `capacity` records wait unread,
 * `push` returns a promise the consumer awaits, so a slow reader slows the
 * fetching instead of buffering the whole log in memory.
 */
export class RecordQueue {
  private buffer: LogRecord[] = [];
  private taker: { resolve: () => void } | undefined;
  private readonly space: Array<() => void> = [];
  private failure: unknown;
  private failed = false;
  private ended = false;

  constructor(private readonly capacity: number) {}

  push(records: readonly LogRecord[]): Promise<void> | undefined {
    if (this.ended || this.failed) return undefined;
    for (const r of records) this.buffer.push(r);
    this.wakeTaker();
    if (this.buffer.length < this.capacity) return undefined;
    return new Promise<void>((resolve) => this.space.push(resolve));
  }

  /**
   * Up to `limit` records, waiting for at least one; `undefined` once the
   * queue has ended and is empty. Rejects with the failure passed to `fail`.
   */
  async take(limit: number): Promise<LogRecord[] | undefined> {
    while (this.buffer.length === 0) {
      if (this.failed) throw this.failure;
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => {
        this.taker = { resolve };
      });
    }
    const out = this.buffer.length <= limit ? this.buffer : this.buffer.slice(0, limit);
    this.buffer = out === this.buffer ? [] : this.buffer.slice(limit);
    if (this.buffer.length < this.capacity) this.wakeSpace();
    return out;
  }

  fail(error: unknown): void {
    if (this.failed || this.ended) return;
    this.failed = true;
    this.failure = error;
    this.buffer = [];
    this.wakeTaker();
    this.wakeSpace();
  }

  /** No more records will come; what is buffered can still be taken. */
  end(): void {
    this.ended = true;
    this.wakeTaker();
    this.wakeSpace();
  }

  private wakeTaker(): void {
    const taker = this.taker;
    this.taker = undefined;
    taker?.resolve();
  }

  private wakeSpace(): void {
    for (const resolve of this.space.splice(0)) resolve();
  }
}
