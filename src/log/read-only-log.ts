import type { Observable } from "rxjs";
import { type AppendResult, type EventLog, LogError, type LogRecord, type ReadOptions } from "./event-log.ts";

/**
 * Any log, with appends refused: what `openLog(url, { readOnly: true })`
 * hands out for backends that have no read-only mode of their own (Kafka),
 * so a forensic server or a replay source cannot add a record by mistake.
 */
export class ReadOnlyLog implements EventLog {
  constructor(private readonly inner: EventLog) {}

  get url(): string {
    return this.inner.url;
  }

  append(_records: readonly Uint8Array[]): Promise<AppendResult> {
    return Promise.reject(
      new LogError(
        `${this.url} is open read-only: nothing can be appended to it through this reader`,
        "config",
      ),
    );
  }

  read(fromIndex: number, options?: ReadOptions): AsyncIterable<LogRecord[]> {
    return this.inner.read(fromIndex, options);
  }

  tail(fromIndex: number): Observable<LogRecord[]> {
    return this.inner.tail(fromIndex);
  }

  lastIndex(): number {
    return this.inner.lastIndex();
  }

  firstIndex(): number {
    return this.inner.firstIndex();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
