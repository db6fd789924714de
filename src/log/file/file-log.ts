import { type FileHandle, mkdir, open } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { type Observable, Subject } from "rxjs";
import {
  type AppendResult,
  type EventLog,
  LogError,
  type LogRecord,
  type ReadOptions,
} from "../event-log.ts";
import { encodeCommit, recordsOfCommit } from "./commit-buffer.ts";
import { encodeSegmentHeader, FRAME_HEADER_SIZE, MAX_RECORD_BYTES, segmentFileName } from "./format.ts";
import { describeProblem, inspectLog, warnRebuiltIndexes } from "./inspect.ts";
import {
  DEFAULT_INDEX_INTERVAL,
  DEFAULT_SEGMENT_BYTES,
  type FileLogOptions,
  sealedCheck,
} from "./options.ts";
import { lockLogDirectory } from "./process-lock.ts";
import { cutTornTail } from "./recovery.ts";
import { syncDirectory } from "./segment-files.ts";
import {
  indexFilePath,
  removeIfPresent,
  removeLeftoverIndexTemps,
  writeSegmentIndex,
} from "./segment-index-file.ts";
import { readSegment, type SegmentView } from "./segment-reader.ts";
import { SparseIndex } from "./sparse-index.ts";
import { tailFrom } from "./tail.ts";

const DEFAULT_BATCH = 1024;

/** One segment as the open log knows it; `records` and `end` only ever cover durable frames. */
export interface Segment {
  readonly path: string;
  readonly firstIndex: number;
  records: number;
  end: number;
  readonly index: SparseIndex;
  /** Byte offset of the last durable frame (0 while there is none): what the segment's index file checks on open. */
  lastFrameOffset: number;
}

/** Resolves a durable group's appenders and hands its records to the tail (or rejects them all). */
type Publish = () => void;

interface PendingAppend {
  readonly records: readonly Uint8Array[];
  readonly frameBytes: number;
  readonly resolve: (r: AppendResult) => void;
  readonly reject: (e: unknown) => void;
}

/**
 * Directories open in this process. Two FileLogs appending to one directory
 * would interleave frames and corrupt it; across processes the LOCK file
 * (process-lock.ts) refuses the second opener.
 */
const openDirs = new Set<string>();

/** Refuses to let an operator tool change a log this process has open. */
export function assertNotOpenHere(dir: string): void {
  const abs = resolve(dir);
  if (openDirs.has(abs))
    throw new LogError(`file log ${abs} is open in this process; close it first`, "config");
}

/**
 * Opens (creating if needed) the file log in `dir`. Rejects with
 * LogError("corrupt") naming the file and byte offset if acknowledged data
 * that open reads is damaged, and then has changed nothing on disk. Open
 * reads the last segment whole, but of each sealed segment only its index
 * file (see FileLogOptions.verifyOnOpen): damage inside a sealed segment is
 * found when its records are read, and by `chronomad log verify`. A missing
 * or unusable index file is rebuilt from its segment, with a warning. A torn
 * tail (an append cut short by a crash) is cut away with a warning.
 */
export async function openFileLog(dir: string, options: FileLogOptions = {}): Promise<FileLog> {
  const abs = resolve(dir);
  if (openDirs.has(abs)) throw new LogError(`file log ${abs} is already open in this process`, "config");
  openDirs.add(abs);
  let unlock: (() => Promise<void>) | undefined;
  try {
    const created = await mkdir(abs, { recursive: true });
    if (created !== undefined) {
      // A new directory is itself an entry in its parent: without syncing the
      // parents, a power loss could take the directory and its records away.
      for (let d = abs; ; d = dirname(d)) {
        await syncDirectory(dirname(d));
        if (d === created) break;
      }
    }
    unlock = await lockLogDirectory(abs);
    const indexInterval = options.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL;
    const inspection = await inspectLog(abs, {
      sealed: sealedCheck(options.verifyOnOpen),
      indexIntervalBytes: indexInterval,
    });
    if (inspection.corrupt) {
      throw new LogError(
        `file log is corrupt: ${describeProblem(inspection.corrupt)}. Nothing was changed; ` +
          "inspect it with `chronomad log verify` and cut it with `chronomad log repair --truncate-after N`",
        "corrupt",
      );
    }
    const segments: Segment[] = inspection.segments.map(({ file, scan, index, lastFrameOffset }) => ({
      path: file.path,
      firstIndex: scan.firstIndex,
      records: scan.records,
      end: scan.validEnd,
      index,
      lastFrameOffset,
    }));
    if (inspection.tornTail) await cutTornTail(abs, inspection.tornTail, segments, options.logger);
    const last = segments[segments.length - 1];
    const sync = (options.fsync ?? "always") === "always";
    let changed = (await removeLeftoverIndexTemps(abs)).length > 0;
    // The active segment grows: an index file beside it (left when a newer
    // segment was cut away) would describe a segment that no longer exists.
    if (last) changed = (await removeIfPresent(indexFilePath(last.path))) || changed;
    for (const rebuilt of warnRebuiltIndexes(inspection, options.logger, "rewritten")) {
      const seg = segments.find((s) => s.path === rebuilt.file.path);
      if (!seg || seg === last) continue;
      try {
        await writeSegmentIndex(seg.path, sealedFacts(seg), seg.index, indexInterval, sync);
        changed = true;
      } catch (err) {
        // An index file is a cache: without it the next open reads the segment again.
        options.logger?.warn(
          { err, file: indexFilePath(seg.path) },
          "file log: could not rewrite a sealed segment's index file",
        );
      }
    }
    if (changed && sync) await syncDirectory(abs);
    const activeHandle = last ? await open(last.path, "r+") : undefined;
    return new FileLog(dir, abs, options, segments, activeHandle, unlock!);
  } catch (err) {
    await unlock?.();
    openDirs.delete(abs);
    throw err;
  }
}

/**
 * The embedded, default EventLog: segment files in one directory.
 *
 * Appends go through a group commit: while one write + fdatasync is in
 * flight, new batches queue up; the next commit takes the whole queue as one
 * buffer, one write and one fdatasync, and resolves each batch with its own
 * range once that fdatasync returns. Throughput under concurrency then grows with
 * the queue instead of being capped at one fsync per append, and a lone
 * appender pays for exactly one write and one fdatasync.
 *
 * One group is written at a time. Once it is durable, the next group's
 * write goes out before the durable one is published: publishing applies
 * its records (the store follows the tail synchronously) and answers its
 * appenders, and that event-loop work then overlaps the disk's work on the
 * next group instead of adding to it. (Two groups written at once would
 * spare the second one a wait, but a crash could then leave it whole behind
 * a torn first one, which recovery must take for damage to acknowledged
 * records rather than for a torn tail.)
 *
 * Only durable state is visible: lastIndex(), read() and tail() never see a
 * record before its commit is synced (or written, with fsync "never"), nor
 * before every record ahead of it is.
 */
export class FileLog implements EventLog {
  readonly url: string;
  private readonly segmentBytes: number;
  private readonly syncEachCommit: boolean;
  private readonly indexInterval: number;
  private queue: PendingAppend[] = [];
  private flushing: Promise<void> | undefined;
  /** Where the next group goes in the active segment: past the write in flight, if any. */
  private writeEnd: number;
  /** The index of the first record of the next group. */
  private nextIndex: number;
  private durableLast: number;
  private closed = false;
  private closing: Promise<void> | undefined;
  private failure: LogError | undefined;
  private readonly live = new Subject<LogRecord[]>();

  /** Use openFileLog(); this constructor trusts that the segments were just verified. */
  constructor(
    displayDir: string,
    private readonly dir: string,
    private readonly options: FileLogOptions,
    private readonly segments: Segment[],
    private activeHandle: FileHandle | undefined,
    private readonly unlock: () => Promise<void>,
  ) {
    this.url = `file:${displayDir}`;
    this.segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    this.syncEachCommit = (options.fsync ?? "always") === "always";
    this.indexInterval = options.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL;
    const last = segments[segments.length - 1];
    this.durableLast = last ? last.firstIndex + last.records - 1 : 0;
    this.nextIndex = this.durableLast + 1;
    this.writeEnd = last?.end ?? 0;
  }

  append(records: readonly Uint8Array[]): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new LogError("log is closed", "closed"));
    if (this.failure) return Promise.reject(this.failure);
    if (records.length === 0) return Promise.reject(new LogError("append of an empty batch", "range"));
    let frameBytes = 0;
    for (const r of records) {
      if (r.length > MAX_RECORD_BYTES) {
        return Promise.reject(new LogError(`record of ${r.length} bytes is too large`, "range"));
      }
      frameBytes += FRAME_HEADER_SIZE + r.length;
    }
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ records, frameBytes, resolve, reject });
      // Starting the commit a microtask later lets appends issued in the same
      // tick share it; after that, appends queue up behind the commit in flight.
      if (!this.flushing) this.flushing = Promise.resolve().then(() => this.flush());
    });
  }

  /** Commits the queue, group after group: the next group's write goes out before the last one is published. */
  private async flush(): Promise<void> {
    try {
      let persisting = this.persistQueued();
      while (persisting) {
        const publish = await persisting;
        persisting = this.persistQueued();
        publish();
        // Publishing may itself have queued appends: applying a record runs
        // services that write, synchronously, while this flush is still on.
        persisting ??= this.persistQueued();
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /** Starts writing what is queued, if anything is. */
  private persistQueued(): Promise<Publish> | undefined {
    if (this.queue.length === 0) return undefined;
    const group = this.queue;
    this.queue = [];
    return this.persist(group);
  }

  /**
   * Writes one group (every queued batch in one write and one fdatasync, in
   * queue order) and resolves, once it is durable, with what publishes it.
   * The write is issued before this returns unless a new segment has to be
   * made first. Never rejects: a failure is published as the rejection of
   * the group's appenders.
   */
  private persist(group: PendingAppend[]): Promise<Publish> {
    if (this.failure) return Promise.resolve(this.rejecting(group));
    const current = this.segments[this.segments.length - 1];
    if (current && this.activeHandle && this.hasRoom(current)) return this.writeGroup(group, current);
    return this.writableSegment().then(
      (seg) => this.writeGroup(group, seg),
      (err: unknown) => {
        this.fail(err, this.dir);
        return this.rejecting(group);
      },
    );
  }

  private async writeGroup(group: PendingAppend[], seg: Segment): Promise<Publish> {
    let frameBytes = 0;
    let records = 0;
    // Pushed into a literal, not `group.map(...)`: encodeCommit sees one
    // array map in every tier (src/util/mapped.ts says why).
    const batches: (readonly Uint8Array[])[] = [];
    for (const p of group) {
      frameBytes += p.frameBytes;
      records += p.records.length;
      batches.push(p.records);
    }
    const lastRecordBytes = group[group.length - 1]!.records.at(-1)!.length;
    const firstIndex = this.nextIndex;
    const offset = this.writeEnd;
    this.nextIndex += records;
    this.writeEnd += frameBytes;
    try {
      const { buf, indexEntries } = encodeCommit(batches, frameBytes, firstIndex, offset, this.indexInterval);
      await writeFully(this.activeHandle!, buf, offset);
      if (this.syncEachCommit) await this.activeHandle!.datasync();
      // lastIndex() moves past the group in the same synchronous step as the tail gets it.
      return () => {
        for (let i = 0; i < indexEntries.length; i += 2)
          seg.index.note(indexEntries[i]!, indexEntries[i + 1]!);
        seg.records += records;
        seg.end += frameBytes;
        seg.lastFrameOffset = seg.end - FRAME_HEADER_SIZE - lastRecordBytes;
        this.durableLast = firstIndex + records - 1;
        let next = firstIndex;
        for (const p of group) {
          p.resolve({ first: next, last: next + p.records.length - 1 });
          next += p.records.length;
        }
        // Tail subscribers get views into the commit buffer (never reused), not copies.
        if (this.live.observed)
          for (const batch of recordsOfCommit(buf, firstIndex, DEFAULT_BATCH)) this.live.next(batch);
      };
    } catch (err) {
      this.fail(err, seg.path);
      return this.rejecting(group);
    }
  }

  private rejecting(group: readonly PendingAppend[]): Publish {
    const failure = this.failure;
    return () => {
      for (const p of group) p.reject(failure);
    };
  }

  private fail(err: unknown, path: string): void {
    if (this.failure) return;
    const msg = err instanceof Error ? err.message : String(err);
    // After a failed write or fdatasync the file's tail is unknown (the kernel
    // may even have dropped dirty pages), so no later append may be stacked on
    // it; reopening runs recovery and finds out what actually reached the disk.
    this.failure = new LogError(
      `write to ${path} failed: ${msg}; the log refuses appends until reopened`,
      "io",
    );
    this.live.error(this.failure);
  }

  /**
   * Whether the next group may go in `seg`, the active one (a segment takes
   * at least one group). Asked before the group ahead is published: by the
   * bytes written, not by the bytes published.
   */
  private hasRoom(seg: Segment): boolean {
    return this.writeEnd < this.segmentBytes || (seg.records === 0 && this.writeEnd === seg.end);
  }

  /** The segment the next commit goes to: the current one, or a new one once it has passed segmentBytes. */
  private async writableSegment(): Promise<Segment> {
    const current = this.segments[this.segments.length - 1];
    if (current && this.hasRoom(current) && this.activeHandle) return current;
    if (this.activeHandle) {
      // Sealed segments are synced even with fsync "never", so that only the
      // last segment can ever need recovery.
      if (!this.syncEachCommit) await this.activeHandle.datasync();
      await this.activeHandle.close();
      this.activeHandle = undefined;
      if (current) await this.writeIndexOf(current);
    }
    // The group ahead may be written but not yet published: nextIndex, not durableLast.
    const firstIndex = this.nextIndex;
    const path = join(this.dir, segmentFileName(firstIndex));
    const fh = await open(path, "wx");
    const header = encodeSegmentHeader(firstIndex);
    try {
      await writeFully(fh, header, 0);
      // The header and the directory entry are made durable before any record
      // goes in, so recovery can treat a damaged header as a creation cut short.
      await fh.datasync();
      await syncDirectory(dirname(path));
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    this.activeHandle = fh;
    const seg: Segment = {
      path,
      firstIndex,
      records: 0,
      end: header.length,
      index: new SparseIndex(this.indexInterval),
      lastFrameOffset: 0,
    };
    this.segments.push(seg);
    this.writeEnd = seg.end;
    return seg;
  }

  /**
   * Persists the index of the segment just sealed, before the next segment
   * exists: a segment followed by another then always has its index file,
   * unless a crash took it (it is rebuilt on open). The group ahead was
   * published by now (publishing runs right after the next group's persist
   * starts, and this runs after an await), so `seg` covers every byte
   * written to it; if it somehow did not, no index is better than a wrong one.
   * A failure here costs only a rebuild at the next open, not the append.
   */
  private async writeIndexOf(seg: Segment): Promise<void> {
    if (seg.records === 0 || seg.end !== this.writeEnd) {
      this.options.logger?.warn(
        { file: indexFilePath(seg.path), records: seg.records, end: seg.end, written: this.writeEnd },
        "file log: not writing the index of a segment whose records are not all published; the next open rebuilds it",
      );
      return;
    }
    try {
      await writeSegmentIndex(seg.path, sealedFacts(seg), seg.index, this.indexInterval, this.syncEachCommit);
    } catch (err) {
      this.options.logger?.warn(
        { err, file: indexFilePath(seg.path) },
        "file log: could not write a sealed segment's index file; the next open rebuilds it",
      );
    }
  }

  async *read(fromIndex: number, options: ReadOptions = {}): AsyncIterable<LogRecord[]> {
    const max = Math.max(1, options.maxBatch ?? DEFAULT_BATCH);
    const until = options.untilIndex ?? Number.POSITIVE_INFINITY;
    let next = Math.max(fromIndex, this.firstIndex());
    while (next <= Math.min(until, this.durableLast)) {
      const seg = this.segmentFor(next);
      const view: SegmentView = {
        path: seg.path,
        firstIndex: seg.firstIndex,
        lastIndex: seg.firstIndex + seg.records - 1,
        end: seg.end,
        index: seg.index,
      };
      for await (const batch of readSegment(view, next, until, max, this.options.onSegmentRead)) {
        next = batch[batch.length - 1]!.index + 1;
        yield batch;
      }
      // A commit may have made more of this segment (or a new one) durable
      // meanwhile; the loop goes on from `next` against a fresh view.
      if (next <= Math.min(until, view.lastIndex)) {
        throw new LogError(`${seg.path} ended before record ${next}`, "io");
      }
    }
  }

  private segmentFor(index: number): Segment {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.segments[mid]!.firstIndex <= index) lo = mid;
      else hi = mid - 1;
    }
    return this.segments[lo]!;
  }

  tail(fromIndex: number): Observable<LogRecord[]> {
    return tailFrom(
      { read: (from) => this.read(from), lastIndex: () => this.durableLast, live: this.live },
      fromIndex,
    );
  }

  lastIndex(): number {
    return this.durableLast;
  }

  firstIndex(): number {
    return this.segments[0]?.firstIndex ?? 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    try {
      while (this.flushing) await this.flushing;
      const fh = this.activeHandle;
      this.activeHandle = undefined;
      if (fh) {
        try {
          if (!this.failure) await fh.datasync();
        } finally {
          await fh.close();
        }
      }
    } finally {
      if (!this.failure) this.live.complete();
      await this.unlock();
      openDirs.delete(this.dir);
    }
  }
}

function sealedFacts(seg: Segment) {
  return {
    firstIndex: seg.firstIndex,
    records: seg.records,
    byteLength: seg.end,
    lastFrameOffset: seg.lastFrameOffset,
  };
}

async function writeFully(fh: FileHandle, buf: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    done += bytesWritten;
  }
}
