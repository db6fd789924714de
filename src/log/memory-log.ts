import { Observable, Subject } from "rxjs";
import { type AppendResult, type EventLog, LogError, type LogRecord, type ReadOptions } from "./event-log.ts";

const DEFAULT_BATCH = 1024;

/**
 * The log held in an array: for tests and benchmarks of everything above the
 * log. Durable only as long as the process lives.
 */
export class MemoryLog implements EventLog {
  readonly url = "memory:";
  private readonly records: LogRecord[] = [];
  private readonly appended = new Subject<LogRecord[]>();
  private closed = false;

  async append(batch: readonly Uint8Array[]): Promise<AppendResult> {
    if (this.closed) throw new LogError("log is closed", "closed");
    if (batch.length === 0) throw new LogError("append of an empty batch", "range");
    const first = this.records.length + 1;
    const added = batch.map((bytes, i) => ({ index: first + i, bytes }));
    for (const r of added) this.records.push(r);
    this.appended.next(added);
    return { first, last: first + batch.length - 1 };
  }

  async *read(fromIndex: number, options: ReadOptions = {}): AsyncIterable<LogRecord[]> {
    const max = options.maxBatch ?? DEFAULT_BATCH;
    const until = Math.min(options.untilIndex ?? Number.POSITIVE_INFINITY, this.records.length);
    for (let i = Math.max(1, fromIndex); i <= until; i += max) {
      yield this.records.slice(i - 1, Math.min(until, i + max - 1));
    }
  }

  tail(fromIndex: number): Observable<LogRecord[]> {
    return new Observable<LogRecord[]>((subscriber) => {
      let next = Math.max(1, fromIndex);
      const emitUpTo = (last: number) => {
        while (next <= last) {
          const end = Math.min(last, next + DEFAULT_BATCH - 1);
          subscriber.next(this.records.slice(next - 1, end));
          next = end + 1;
        }
      };
      // Subscribing to live appends before the backlog is read means no batch
      // can fall between the two; records already emitted are skipped by index.
      const live = this.appended.subscribe((batch) => {
        const last = batch[batch.length - 1]!.index;
        if (last >= next) emitUpTo(last);
      });
      emitUpTo(this.records.length);
      return () => live.unsubscribe();
    });
  }

  lastIndex(): number {
    return this.records.length;
  }

  firstIndex(): number {
    return 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.appended.complete();
  }
}
