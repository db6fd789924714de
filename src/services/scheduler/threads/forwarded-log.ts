import { Observable, type Subscriber } from "rxjs";
import {
  type AppendResult,
  type EventLog,
  LogError,
  type LogRecord,
  type ReadOptions,
} from "../../../log/event-log.ts";

/** How the replica asks the main thread for records. */
export interface ForwardedLogPort {
  /** Start sending records from `from` on. */
  follow(from: number): void;
  /** While catching up: send the next run. */
  more(): void;
}

/** Runs requested ahead while catching up: one being applied, one on its way. */
const AHEAD = 2;

/**
 * The log as a replica in a scheduler thread sees it: one ordered stream of
 * the records the main thread applied, first pulled run by run (catching up
 * from the snapshot the replica loaded), then pushed as the main store
 * applies them. A Store reads it like any log (read() to catch up, tail() to
 * follow), so the replica applies records with the store's own code.
 *
 * `hold()` stops handing records to the store until `release()`: a
 * computation that must see one index throughout holds the log while it
 * runs, whether or not it ever yields.
 */
export class ForwardedLog implements EventLog {
  readonly url = "forwarded:";
  private readonly queue: LogRecord[][] = [];
  private wake: (() => void) | undefined;
  private subscriber: Subscriber<LogRecord[]> | undefined;
  private following = false;
  private live = false;
  private requested = 0;
  private held = 0;
  private received = 0;
  private failure: Error | undefined;
  /** Records the following store applied as they arrived, and the time it took (ms). */
  readonly applying = { records: 0, ms: 0 };

  /** `startIndex`: the main store's applied index when this replica started; records up to it are there to read. */
  constructor(
    private readonly startIndex: number,
    private readonly port: ForwardedLogPort,
  ) {}

  /** A run of records from the main thread (`live`: pushed as applied, not pulled). */
  receive(records: readonly LogRecord[], live: boolean): void {
    if (!live) this.requested = Math.max(0, this.requested - 1);
    if (records.length > 0) {
      this.received = records[records.length - 1]!.index;
      this.queue.push(records as LogRecord[]);
    }
    // Ask for the next run before applying this one: the main thread reads it meanwhile.
    this.pump();
    this.deliver();
    this.wake?.();
  }

  /** The main thread caught this replica up: from now on records are pushed. */
  goLive(): void {
    this.live = true;
    this.requested = 0;
  }

  get isLive(): boolean {
    return this.live;
  }

  hold(): void {
    this.held++;
  }

  release(): void {
    if (--this.held === 0) this.deliver();
  }

  /** The replica cannot go on: readers see the error. */
  fail(err: Error): void {
    this.failure = err;
    this.subscriber?.error(err);
    this.wake?.();
  }

  append(_records: readonly Uint8Array[]): Promise<AppendResult> {
    return Promise.reject(new LogError("a scheduler replica never appends", "config"));
  }

  async *read(fromIndex: number, options: ReadOptions = {}): AsyncIterable<LogRecord[]> {
    const until = Math.min(options.untilIndex ?? Number.POSITIVE_INFINITY, this.lastIndex());
    this.start(fromIndex);
    for (let next = fromIndex; next <= until; ) {
      const batch = await this.take();
      const kept = batch.filter((r) => r.index >= next && r.index <= until);
      const rest = batch.filter((r) => r.index > until);
      if (rest.length > 0) this.queue.unshift(rest);
      if (kept.length === 0) continue;
      next = kept[kept.length - 1]!.index + 1;
      yield kept;
    }
  }

  tail(fromIndex: number): Observable<LogRecord[]> {
    return new Observable<LogRecord[]>((subscriber) => {
      this.start(fromIndex);
      this.subscriber = subscriber;
      this.deliver();
      this.pump();
      return () => {
        if (this.subscriber === subscriber) this.subscriber = undefined;
      };
    });
  }

  /** Records up to the start index are there to be read; past it, what has arrived. */
  lastIndex(): number {
    return Math.max(this.startIndex, this.received);
  }

  firstIndex(): number {
    return 1;
  }

  async close(): Promise<void> {
    this.subscriber?.complete();
  }

  private start(from: number): void {
    if (this.following) return;
    this.following = true;
    this.port.follow(from);
    this.pump();
  }

  /** Keeps AHEAD runs requested or unconsumed while catching up. */
  private pump(): void {
    if (!this.following || this.live) return;
    // Runs queued for a following store are applied right away: they do not count as ahead.
    const unconsumed = this.subscriber && this.held === 0 ? 0 : this.queue.length;
    while (this.requested + unconsumed < AHEAD) {
      this.requested++;
      this.port.more();
    }
  }

  private deliver(): void {
    const s = this.subscriber;
    if (!s || this.held > 0) return;
    while (this.queue.length > 0 && !s.closed) {
      const batch = this.queue.shift()!;
      const t0 = performance.now();
      // The store applies it before next() returns.
      s.next(batch);
      this.applying.ms += performance.now() - t0;
      this.applying.records += batch.length;
    }
  }

  private async take(): Promise<LogRecord[]> {
    for (;;) {
      if (this.failure) throw this.failure;
      const batch = this.queue.shift();
      if (batch) {
        this.pump();
        return batch;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }
}
