import type { WarnLogger } from "./options.ts";
import { listSegmentFiles, type SegmentFile } from "./segment-files.ts";
import { indexFilePath, loadSegmentIndex } from "./segment-index-file.ts";
import { type ScanProblem, type SegmentScan, scanSegment } from "./segment-scan.ts";
import { SparseIndex } from "./sparse-index.ts";

/** A problem located precisely enough for an operator to act on it. */
export interface LogProblem {
  readonly file: string;
  readonly offset: number;
  /** The index the damaged record would have had, when known. */
  readonly index?: number;
  readonly reason: string;
}

/** A torn tail found on the last segment: what open() will cut away. */
export interface TornTail extends LogProblem {
  /** Bytes from `offset` to the end of the file that are not a complete record. */
  readonly droppedBytes: number;
  /** The whole file goes: its header never became durable, so it holds nothing. */
  readonly removeFile: boolean;
}

export interface InspectedSegment {
  readonly file: SegmentFile;
  readonly scan: SegmentScan;
  readonly index: SparseIndex;
  /** Byte offset of the last valid frame; 0 when there is none. */
  readonly lastFrameOffset: number;
  /**
   * Why this sealed segment's index file could not be used (so the segment
   * was read to rebuild its index); undefined when it was used, or when the
   * segment was read whole anyway (the last one, or sealed "crc"/"structure").
   */
  readonly indexFileProblem?: string;
}

export interface Inspection {
  readonly segments: InspectedSegment[];
  /** The first damage that is not a torn tail; nothing after it was scanned. */
  readonly corrupt?: LogProblem;
  readonly tornTail?: TornTail;
}

export interface InspectOptions {
  /**
   * What is read of the sealed segments (all but the last one, which is
   * always read whole and CRC-checked):
   * - "indexes": their index files only, checked against the segment's
   *   header and last record; a segment whose index file is missing or does
   *   not hold is read whole (and CRC-checked) to rebuild it;
   * - "crc": every record, CRC-checked;
   * - "structure": every frame header, to check that frames tile each file.
   */
  readonly sealed: "indexes" | "crc" | "structure";
  readonly indexIntervalBytes: number;
}

/**
 * Warns about the sealed segments whose index file could not be used and
 * which open() therefore read whole: one warning per damaged or stale index
 * file, naming it and why, and one for all the missing ones (a log written
 * before index files existed has none). Returns those segments.
 */
export function warnRebuiltIndexes(
  inspection: Inspection,
  logger: WarnLogger | undefined,
  how: "rewritten" | "in memory only",
): InspectedSegment[] {
  const rebuilt = inspection.segments.filter((s) => s.indexFileProblem !== undefined);
  const missing = rebuilt
    .filter((s) => s.indexFileProblem === "missing")
    .map((s) => indexFilePath(s.file.path));
  if (missing.length > 0) {
    logger?.warn(
      { files: missing, reason: "missing", rebuilt: how },
      `file log: ${missing.length} sealed segment(s) had no index file; rebuilt them from their segments`,
    );
  }
  for (const s of rebuilt) {
    if (s.indexFileProblem === "missing") continue;
    logger?.warn(
      { file: indexFilePath(s.file.path), reason: s.indexFileProblem, rebuilt: how },
      "file log: a sealed segment's index file cannot be used; rebuilt it from its segment",
    );
  }
  return rebuilt;
}

export function describeProblem(p: LogProblem): string {
  const record = p.index === undefined ? "" : ` (record ${p.index})`;
  return `${p.file} at byte offset ${p.offset}${record}: ${p.reason}`;
}

/**
 * Reads a log directory without changing it: every segment's structure, the
 * CRCs asked for, index continuity between segments, and whether the last
 * segment ends in a torn write.
 */
export async function inspectLog(dir: string, options: InspectOptions): Promise<Inspection> {
  const files = await listSegmentFiles(dir);
  const segments: InspectedSegment[] = [];
  let expectedFirst: number | undefined;
  const indexFile =
    options.sealed === "indexes"
      ? readAhead(files.slice(0, -1), (f) => loadSegmentIndex(f, options.indexIntervalBytes))
      : undefined;
  for (const [i, file] of files.entries()) {
    const last = i === files.length - 1;
    if (expectedFirst !== undefined && file.firstIndex !== expectedFirst) {
      const reason =
        `segment starts at index ${file.firstIndex} but the previous one ends at ${expectedFirst - 1}` +
        " (a segment is missing, or one is left over)";
      return { segments, corrupt: { file: file.path, offset: 0, reason } };
    }
    let indexFileProblem: string | undefined;
    if (!last && indexFile) {
      const loaded = await indexFile(i);
      if (!("problem" in loaded)) {
        const { records, byteLength, lastFrameOffset, index } = loaded;
        const scan = {
          path: file.path,
          firstIndex: file.firstIndex,
          records,
          validEnd: byteLength,
          fileSize: byteLength,
        };
        segments.push({ file, scan, index, lastFrameOffset });
        expectedFirst = file.firstIndex + records;
        continue;
      }
      indexFileProblem = loaded.problem;
    }
    const index = new SparseIndex(options.indexIntervalBytes);
    let lastFrameOffset = 0;
    const scan = await scanSegment(file.path, file.firstIndex, {
      verifyCrc: last || options.sealed !== "structure",
      classifyTail: last,
      onFrame: (n, offset) => {
        index.note(n, offset);
        lastFrameOffset = offset;
      },
    });
    segments.push({ file, scan, index, lastFrameOffset, ...(indexFileProblem ? { indexFileProblem } : {}) });
    if (scan.problem) {
      const p = toLogProblem(file.path, scan.problem);
      if (!scan.problem.tornTail) return { segments, corrupt: p };
      const removeFile = scan.problem.index === undefined;
      return { segments, tornTail: { ...p, droppedBytes: scan.fileSize - scan.problem.offset, removeFile } };
    }
    expectedFirst = scan.firstIndex + scan.records;
  }
  return { segments };
}

/** Index files read ahead of the walk over the segments. */
const READ_AHEAD = 8;

/**
 * `load` of each item, started up to READ_AHEAD items ahead of the one asked
 * for (in order): on a cold disk each index file costs a few seeks, and
 * overlapping them keeps open short when there are thousands of segments.
 */
function readAhead<T, R>(items: readonly T[], load: (item: T) => Promise<R>): (i: number) => Promise<R> {
  const started: Promise<R>[] = [];
  return (i) => {
    for (let k = started.length; k < Math.min(items.length, i + READ_AHEAD); k++) {
      const p = load(items[k]!);
      // A walk that stops early (damage) never awaits the rest; their failures are not errors.
      p.catch(() => undefined);
      started.push(p);
    }
    return started[i]!;
  };
}

function toLogProblem(file: string, p: ScanProblem): LogProblem {
  return p.index === undefined
    ? { file, offset: p.offset, reason: p.reason }
    : { file, offset: p.offset, index: p.index, reason: p.reason };
}
