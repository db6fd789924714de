import { type FSWatcher, watch } from "node:fs";
import { resolve } from "node:path";
import { Observable, Subject } from "rxjs";
import {
  type AppendResult,
  type EventLog,
  LogError,
  type LogRecord,
  type ReadOptions,
} from "../event-log.ts";
import { HEADER_SIZE } from "./format.ts";
import { describeProblem, inspectLog, warnRebuiltIndexes } from "./inspect.ts";
import { DEFAULT_INDEX_INTERVAL, type FileLogOptions, sealedCheck } from "./options.ts";
import { listSegmentFiles } from "./segment-files.ts";
import { readSegment, type SegmentView } from "./segment-reader.ts";
import { scanSegment } from "./segment-scan.ts";
import { SparseIndex } from "./sparse-index.ts";

const DEFAULT_BATCH = 1024;

interface KnownSegment {
  readonly path: string;
  readonly firstIndex: number;
  records: number;
  end: number;
  readonly index: SparseIndex;
}

export type ReadOnlyFileLogOptions = Pick<FileLogOptions, "verifyOnOpen" | "indexIntervalBytes" | "logger">;

/**
 * Opens the file log in `dir` for reading only, beside whatever else has it
 * open: it takes no LOCK, creates nothing, and never cuts or repairs a
 * thing. It sees the records up to the last complete frame whose CRC holds;
 * a torn or half-written tail (a live writer in the middle of an append, or
 * an append a crash cut short) is where it ends, not an error. Damage
 * before that, in what open reads (the last segment whole, and the index
 * files of sealed segments, rebuilt in memory from a segment whose index
 * file is missing or unusable), is refused with LogError("corrupt").
 *
 * A directory that does not exist or holds no segment files is a
 * LogError("config") naming it: there is nothing to read, and most likely
 * the path is wrong.
 */
export async function openFileLogReadOnly(
  dir: string,
  options: ReadOnlyFileLogOptions = {},
): Promise<ReadOnlyFileLog> {
  const abs = resolve(dir);
  const files = await listSegmentFiles(abs);
  if (files.length === 0) {
    throw new LogError(`file log ${abs} holds no segment files (*.seg): there is nothing to read`, "config");
  }
  const indexInterval = options.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL;
  const inspection = await inspectLog(abs, {
    sealed: sealedCheck(options.verifyOnOpen),
    indexIntervalBytes: indexInterval,
  });
  if (inspection.corrupt) {
    throw new LogError(
      `file log is corrupt: ${describeProblem(inspection.corrupt)}; inspect it with \`chronomad log verify\``,
      "corrupt",
    );
  }
  // A reader never writes: what open() of the writer would rewrite, it rebuilds in memory.
  warnRebuiltIndexes(inspection, options.logger, "in memory only");
  const segments: KnownSegment[] = inspection.segments.map(({ file, scan, index }) => ({
    path: file.path,
    firstIndex: scan.firstIndex,
    records: scan.records,
    end: scan.validEnd,
    index,
  }));
  // A segment whose header is not there yet: a writer is creating it, or a crash cut that short.
  if (inspection.tornTail?.removeFile) segments.pop();
  if (segments.length === 0) {
    throw new LogError(
      `file log ${abs} holds no records yet: its first segment is still being created`,
      "config",
    );
  }
  return new ReadOnlyFileLog(dir, abs, segments, indexInterval, options);
}

/**
 * A file log opened by openFileLogReadOnly. read() serves what the directory
 * held when it was opened (and what it has grown by since); tail() also
 * follows the directory, so when another process appends to it, the new
 * records are read as they appear. append() always refuses.
 */
export class ReadOnlyFileLog implements EventLog {
  readonly url: string;
  private last: number;
  private closed = false;
  private watcher: FSWatcher | undefined;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  /** Emits after the log has grown; tails read the new records from disk. */
  private readonly grew = new Subject<void>();

  /** Use openFileLogReadOnly(). */
  constructor(
    displayDir: string,
    private readonly dir: string,
    private readonly segments: KnownSegment[],
    private readonly indexInterval: number,
    private readonly options: ReadOnlyFileLogOptions,
  ) {
    this.url = `file:${displayDir}`;
    const lastSeg = segments[segments.length - 1];
    this.last = lastSeg ? lastSeg.firstIndex + lastSeg.records - 1 : 0;
  }

  append(_records: readonly Uint8Array[]): Promise<AppendResult> {
    return Promise.reject(
      new LogError(
        `${this.url} is open read-only: nothing can be appended to it through this reader`,
        "config",
      ),
    );
  }

  async *read(fromIndex: number, options: ReadOptions = {}): AsyncIterable<LogRecord[]> {
    if (this.closed) throw new LogError(`${this.url} is closed`, "closed");
    const max = Math.max(1, options.maxBatch ?? DEFAULT_BATCH);
    const until = options.untilIndex ?? Number.POSITIVE_INFINITY;
    let next = Math.max(fromIndex, this.firstIndex());
    while (next <= Math.min(until, this.last)) {
      const seg = this.segmentFor(next);
      const view: SegmentView = {
        path: seg.path,
        firstIndex: seg.firstIndex,
        lastIndex: seg.firstIndex + seg.records - 1,
        end: seg.end,
        index: seg.index,
      };
      for await (const batch of readSegment(view, next, until, max)) {
        next = batch[batch.length - 1]!.index + 1;
        yield batch;
      }
      if (next <= Math.min(until, view.lastIndex)) {
        throw new LogError(`${seg.path} ended before record ${next}`, "io");
      }
    }
  }

  /**
   * Every record from `fromIndex` on: what the directory holds, then what
   * other processes append to it, read from disk when the directory
   * changes. Completes when this reader is closed.
   */
  tail(fromIndex: number): Observable<LogRecord[]> {
    return new Observable<LogRecord[]>((subscriber) => {
      let next = Math.max(1, fromIndex);
      let pumping = false;
      let again = false;
      // One read at a time per subscriber; growth seen meanwhile is read right after it.
      const pump = async () => {
        if (pumping) {
          again = true;
          return;
        }
        pumping = true;
        try {
          do {
            again = false;
            for await (const batch of this.read(next)) {
              if (subscriber.closed) return;
              next = batch[batch.length - 1]!.index + 1;
              subscriber.next(batch);
            }
          } while (again && !subscriber.closed);
        } catch (err) {
          subscriber.error(err);
        } finally {
          pumping = false;
        }
      };
      const growth = this.grew.subscribe({
        next: () => void pump(),
        error: (err: unknown) => subscriber.error(err),
        complete: () => subscriber.complete(),
      });
      this.follow();
      void pump();
      return () => growth.unsubscribe();
    });
  }

  lastIndex(): number {
    return this.last;
  }

  firstIndex(): number {
    return this.segments[0]?.firstIndex ?? 1;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watcher?.close();
    this.watcher = undefined;
    await this.refreshing;
    this.grew.complete();
  }

  private segmentFor(index: number): KnownSegment {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.segments[mid]!.firstIndex <= index) lo = mid;
      else hi = mid - 1;
    }
    return this.segments[lo]!;
  }

  /**
   * Watches the directory once a tail wants to follow it. Nothing polls: a
   * write to a segment or a new segment file is a change event, and a
   * change only costs a scan of the bytes past what is already known.
   */
  private follow(): void {
    if (this.watcher || this.closed) return;
    try {
      this.watcher = watch(this.dir, { persistent: false }, () => this.refresh());
      this.watcher.on("error", (err) => {
        this.options.logger?.warn(
          { err, dir: this.dir },
          "read-only file log: no longer following the directory",
        );
        this.watcher?.close();
      });
    } catch (err) {
      this.options.logger?.warn(
        { err, dir: this.dir },
        "read-only file log: cannot watch the directory; serving what it held when opened",
      );
      return;
    }
    // What was appended between the open and the watch.
    this.refresh();
  }

  private refresh(): void {
    if (this.closed) return;
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      try {
        do {
          this.refreshAgain = false;
          const before = this.last;
          await this.scanGrowth();
          if (this.last > before && !this.closed) this.grew.next();
        } while (this.refreshAgain && !this.closed);
      } catch (err) {
        this.watcher?.close();
        this.watcher = undefined;
        this.closed = true;
        this.grew.error(err);
      } finally {
        this.refreshing = undefined;
      }
    })();
  }

  /**
   * Reads what was added since the last look: the rest of the last known
   * segment, then any segment after it. A segment after another exists only
   * once the writer has sealed the one before, so the listing comes first.
   */
  private async scanGrowth(): Promise<void> {
    const files = await listSegmentFiles(this.dir);
    const current = this.segments[this.segments.length - 1]!;
    const later = files.filter((f) => f.firstIndex > current.firstIndex);
    const scan = await scanSegment(current.path, current.firstIndex, {
      verifyCrc: true,
      classifyTail: later.length === 0,
      onFrame: (n, offset) => current.index.note(n, offset),
      resumeAt: { offset: current.end, index: current.firstIndex + current.records },
    });
    if (scan.fileSize < current.end) {
      throw new LogError(
        `${current.path} shrank below records this reader had already read (something truncated the log)`,
        "corrupt",
      );
    }
    this.grow(current, scan.records, scan.validEnd);
    if (scan.problem && !scan.problem.tornTail) throw this.corrupt(current.path, scan.problem);
    if (scan.problem) return;
    for (const [i, file] of later.entries()) {
      const expected = this.last + 1;
      if (file.firstIndex !== expected) {
        throw new LogError(
          `${file.path} starts at index ${file.firstIndex} but the log before it ends at ${expected - 1}`,
          "corrupt",
        );
      }
      const index = new SparseIndex(this.indexInterval);
      const next = await scanSegment(file.path, file.firstIndex, {
        verifyCrc: true,
        classifyTail: i === later.length - 1,
        onFrame: (n, offset) => index.note(n, offset),
      });
      // No header yet: the writer is still creating it.
      if (next.problem?.tornTail && next.problem.index === undefined) return;
      if (next.problem && !next.problem.tornTail) throw this.corrupt(file.path, next.problem);
      const seg: KnownSegment = {
        path: file.path,
        firstIndex: file.firstIndex,
        records: 0,
        end: HEADER_SIZE,
        index,
      };
      this.segments.push(seg);
      this.grow(seg, next.records, next.validEnd);
      if (next.problem) return;
    }
  }

  /** Makes a scanned extent visible: records and end first, then the last index that read() checks. */
  private grow(seg: KnownSegment, records: number, end: number): void {
    if (records <= seg.records) return;
    seg.records = records;
    seg.end = end;
    this.last = seg.firstIndex + seg.records - 1;
  }

  private corrupt(path: string, problem: { offset: number; index?: number; reason: string }): LogError {
    return new LogError(`file log is corrupt: ${describeProblem({ file: path, ...problem })}`, "corrupt");
  }
}
