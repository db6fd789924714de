import { open, unlink } from "node:fs/promises";
import { resolve } from "node:path";
import { LogError } from "../event-log.ts";
import { assertNotOpenHere } from "./file-log.ts";
import { describeProblem } from "./inspect.ts";
import { lockedByAnother } from "./process-lock.ts";
import { listSegmentFiles, syncDirectory } from "./segment-files.ts";
import { indexFilePath, removeIfPresent } from "./segment-index-file.ts";
import { scanSegment } from "./segment-scan.ts";

export interface RepairReport {
  readonly dir: string;
  /** The log's last index after the repair. */
  readonly lastIndex: number;
  readonly removedSegments: readonly string[];
  readonly truncated?: { readonly file: string; readonly offset: number; readonly droppedBytes: number };
}

/**
 * Cuts the log so that `truncateAfter` is its last index: later segments are
 * deleted and the segment holding `truncateAfter` is truncated after it.
 * Everything kept is CRC-checked first; if any of it is damaged nothing is
 * changed and the call rejects naming the damage. This destroys records: it
 * only ever runs when an operator asks for it, with the server stopped.
 */
export async function repairFileLog(dir: string, truncateAfter: number): Promise<RepairReport> {
  const abs = resolve(dir);
  assertNotOpenHere(abs);
  const holder = await lockedByAnother(abs);
  if (holder !== undefined) {
    throw new LogError(`file log ${abs} is open in process ${holder}; stop it before repairing`, "config");
  }
  if (!Number.isSafeInteger(truncateAfter) || truncateAfter < 0) {
    throw new LogError(`truncate-after must be a non-negative integer, got ${truncateAfter}`, "range");
  }
  const files = await listSegmentFiles(abs);
  const first = files[0];
  if (!first) {
    if (truncateAfter === 0) return { dir: abs, lastIndex: 0, removedSegments: [] };
    throw new LogError(`the log in ${abs} is empty; it has no index ${truncateAfter}`, "range");
  }
  if (truncateAfter < first.firstIndex - 1) {
    throw new LogError(`index ${truncateAfter} is before the log's first index ${first.firstIndex}`, "range");
  }
  // The segment that will end the log: the last one starting at or before
  // `truncateAfter`, or the first one, left empty, when cutting everything.
  let keep = files.findLastIndex((f) => f.firstIndex <= truncateAfter);
  if (keep < 0) keep = 0;

  let expectedFirst = first.firstIndex;
  let cut: { file: string; validEnd: number; fileSize: number } | undefined;
  for (const [i, file] of files.slice(0, keep + 1).entries()) {
    if (file.firstIndex !== expectedFirst) {
      throw new LogError(
        `${file.path} starts at index ${file.firstIndex}, expected ${expectedFirst}; cannot keep records past ${expectedFirst - 1}`,
        "corrupt",
      );
    }
    const last = i === keep;
    const scan = await scanSegment(file.path, file.firstIndex, {
      verifyCrc: true,
      classifyTail: false,
      ...(last ? { untilIndex: truncateAfter } : {}),
    });
    if (scan.problem) {
      const where = describeProblem({ file: file.path, ...scan.problem });
      const before = scan.problem.index === undefined ? file.firstIndex - 1 : scan.problem.index - 1;
      throw new LogError(
        `cannot keep damaged data: ${where}; truncate after ${before} or earlier`,
        "corrupt",
      );
    }
    expectedFirst = scan.firstIndex + scan.records;
    if (last) {
      if (expectedFirst - 1 < truncateAfter) {
        throw new LogError(
          `the log ends at index ${expectedFirst - 1}; it has no index ${truncateAfter}`,
          "range",
        );
      }
      cut = { file: file.path, validEnd: scan.validEnd, fileSize: scan.fileSize };
    }
  }

  // Newest first, so that a repair interrupted halfway still leaves a prefix
  // of the log behind, and running it again finishes the job.
  const removed = files.slice(keep + 1).reverse();
  // A segment's index file goes before it, so that no index ever outlives its segment.
  for (const f of removed) {
    await removeIfPresent(indexFilePath(f.path));
    await unlink(f.path);
  }
  // The segment kept last becomes the one appended to: its index file (if it was sealed) no longer holds.
  const keptLast = files[keep]!;
  const staleIndex = await removeIfPresent(indexFilePath(keptLast.path));
  if (removed.length > 0 || staleIndex) await syncDirectory(abs);
  let truncated: RepairReport["truncated"];
  if (cut && cut.fileSize > cut.validEnd) {
    const fh = await open(cut.file, "r+");
    try {
      await fh.truncate(cut.validEnd);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    truncated = { file: cut.file, offset: cut.validEnd, droppedBytes: cut.fileSize - cut.validEnd };
  }
  return {
    dir: abs,
    lastIndex: truncateAfter,
    removedSegments: removed.map((f) => f.path).reverse(),
    ...(truncated ? { truncated } : {}),
  };
}
