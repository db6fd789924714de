import { Observable } from "rxjs";
import type { LogRecord } from "../event-log.ts";

/** What tailing needs of the log. */
export interface TailSource {
  read(fromIndex: number): AsyncIterable<LogRecord[]>;
  lastIndex(): number;
  /**
   * Every commit, emitted in the same synchronous step in which lastIndex()
   * moves past it. Completes when the log closes, errors if it fails.
   */
  readonly live: Observable<LogRecord[]>;
}

/**
 * Records from `fromIndex` on: the backlog read from disk, then live commits.
 *
 * Live batches are ignored until the backlog is read: the backlog reader
 * keeps reading from disk until it reaches lastIndex(), and switches to live
 * in the same synchronous step as that check, so every commit is seen exactly
 * once - by the reader if it became durable before the switch, live after it.
 * Nothing is buffered for a subscriber still reading its backlog (the records
 * it has not reached yet are read from disk when it gets there), and appends
 * never wait for it.
 */
export function tailFrom(source: TailSource, fromIndex: number): Observable<LogRecord[]> {
  return new Observable<LogRecord[]>((subscriber) => {
    let next = Math.max(1, fromIndex);
    let caughtUp = false;
    const live = source.live.subscribe({
      next: (batch) => {
        if (!caughtUp) return;
        const first = batch[0]!.index;
        const last = batch[batch.length - 1]!.index;
        if (last < next) return;
        subscriber.next(first >= next ? batch : batch.slice(next - first));
        next = last + 1;
      },
      error: (err: unknown) => subscriber.error(err),
      complete: () => subscriber.complete(),
    });
    const catchUp = async () => {
      while (!subscriber.closed) {
        if (next > source.lastIndex()) {
          caughtUp = true;
          return;
        }
        for await (const batch of source.read(next)) {
          if (subscriber.closed) return;
          next = batch[batch.length - 1]!.index + 1;
          subscriber.next(batch);
        }
      }
    };
    catchUp().catch((err: unknown) => subscriber.error(err));
    return () => live.unsubscribe();
  });
}
