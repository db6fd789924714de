import { basename, resolve } from "node:path";
import { describeProblem, inspectLog, type LogProblem } from "./inspect.ts";
import { DEFAULT_INDEX_INTERVAL } from "./options.ts";
import { listSegmentFiles } from "./segment-files.ts";
import { loadSegmentIndex } from "./segment-index-file.ts";

export interface VerifiedSegment {
  readonly file: string;
  readonly firstIndex: number;
  /** Valid records (up to the problem, for the segment that has one). */
  readonly records: number;
  readonly bytes: number;
  /**
   * For a sealed segment (all but the last): why its index file cannot be
   * used ("missing", a checksum mismatch, a segment it no longer matches),
   * or undefined when it can. The next open rebuilds it; it is not damage to
   * the log.
   */
  readonly indexFileProblem?: string;
}

export interface VerifyReport {
  readonly dir: string;
  /** Segments checked, oldest first; none after the one holding a corrupt record. */
  readonly segments: readonly VerifiedSegment[];
  readonly records: number;
  readonly firstIndex: number;
  /** Last index of the valid prefix: the highest safe `--truncate-after` when there is a problem. */
  readonly lastIndex: number;
  /**
   * The first problem. "torn-tail" is an append cut short by a crash, which
   * open() cuts away on its own; "corrupt" is damage that open() refuses.
   */
  readonly problem?: LogProblem & { readonly kind: "corrupt" | "torn-tail"; readonly message: string };
  /** Whether open() will accept the log (no problem, or only a torn tail). */
  readonly healthy: boolean;
}

/**
 * Reads the whole log and checks every record's CRC, each segment's header,
 * and that indexes run on densely from segment to segment. Changes nothing.
 */
export async function verifyFileLog(dir: string): Promise<VerifyReport> {
  const abs = resolve(dir);
  const inspection = await inspectLog(abs, {
    sealed: "crc",
    indexIntervalBytes: DEFAULT_INDEX_INTERVAL,
  });
  const segments: VerifiedSegment[] = [];
  const files = (await listSegmentFiles(abs)).length;
  for (const [i, { file, scan }] of inspection.segments.entries()) {
    // Only sealed segments (all but the last file) have index files.
    const sealed = i < files - 1;
    const loaded = sealed && !scan.problem ? await loadSegmentIndex(file, DEFAULT_INDEX_INTERVAL) : undefined;
    segments.push({
      file: file.path,
      firstIndex: scan.firstIndex,
      records: scan.records,
      bytes: scan.fileSize,
      ...(loaded && "problem" in loaded ? { indexFileProblem: loaded.problem } : {}),
    });
  }
  const records = segments.reduce((n, s) => n + s.records, 0);
  const firstIndex = segments[0]?.firstIndex ?? 1;
  const base = { dir: abs, segments, records, firstIndex, lastIndex: firstIndex + records - 1 };
  if (inspection.corrupt) {
    const p = inspection.corrupt;
    return { ...base, problem: { ...p, kind: "corrupt", message: describeProblem(p) }, healthy: false };
  }
  if (inspection.tornTail) {
    const p = inspection.tornTail;
    const what = p.removeFile
      ? `segment ${basename(p.file)} was never completely created and will be removed`
      : `${p.droppedBytes} bytes of an unfinished append will be cut off`;
    const message = `torn tail: ${describeProblem(p)}; ${what} the next time the log is opened`;
    const { droppedBytes: _d, removeFile: _r, ...problem } = p;
    return { ...base, problem: { ...problem, kind: "torn-tail", message }, healthy: true };
  }
  return { ...base, healthy: true };
}
