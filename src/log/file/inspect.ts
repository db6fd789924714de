import { listSegmentFiles, type SegmentFile } from "./segment-files.ts";
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
}

export interface Inspection {
  readonly segments: InspectedSegment[];
  /** The first damage that is not a torn tail; nothing after it was scanned. */
  readonly corrupt?: LogProblem;
  readonly tornTail?: TornTail;
}

export interface InspectOptions {
  /** CRC-check sealed segments too; the last segment is always CRC-checked. */
  readonly verifySealed: boolean;
  readonly indexIntervalBytes: number;
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
  for (const [i, file] of files.entries()) {
    const last = i === files.length - 1;
    if (expectedFirst !== undefined && file.firstIndex !== expectedFirst) {
      const reason =
        `segment starts at index ${file.firstIndex} but the previous one ends at ${expectedFirst - 1}` +
        " (a segment is missing, or one is left over)";
      return { segments, corrupt: { file: file.path, offset: 0, reason } };
    }
    const index = new SparseIndex(options.indexIntervalBytes);
    const scan = await scanSegment(file.path, file.firstIndex, {
      verifyCrc: last || options.verifySealed,
      classifyTail: last,
      onFrame: (n, offset) => index.note(n, offset),
    });
    segments.push({ file, scan, index });
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

function toLogProblem(file: string, p: ScanProblem): LogProblem {
  return p.index === undefined
    ? { file, offset: p.offset, reason: p.reason }
    : { file, offset: p.offset, index: p.index, reason: p.reason };
}
