import { open, unlink } from "node:fs/promises";
import type { Segment } from "./file-log.ts";
import type { TornTail } from "./inspect.ts";
import type { WarnLogger } from "./options.ts";
import { syncDirectory } from "./segment-files.ts";

/**
 * Cuts a torn tail found by inspectLog off the last segment (or removes that
 * segment if its header never became durable), and drops it from `segments`,
 * whose last entry already ends at the last complete frame. Only records no
 * append ever resolved for are lost: an append resolves after the fdatasync
 * that covers all of its frames, and a torn tail is the part of a write that
 * never completed.
 */
export async function cutTornTail(
  dir: string,
  torn: TornTail,
  segments: Segment[],
  logger: WarnLogger | undefined,
): Promise<void> {
  if (torn.removeFile) {
    logger?.warn(
      { file: torn.file, bytes: torn.droppedBytes, reason: torn.reason },
      "file log: removing a segment whose creation was cut short",
    );
    await unlink(torn.file);
    await syncDirectory(dir);
    segments.pop();
    return;
  }
  const last = segments[segments.length - 1]!;
  logger?.warn(
    {
      file: torn.file,
      offset: torn.offset,
      index: torn.index,
      bytes: torn.droppedBytes,
      reason: torn.reason,
    },
    "file log: cutting a torn write off the end of the log",
  );
  const fh = await open(last.path, "r+");
  try {
    await fh.truncate(last.end);
    await fh.datasync();
  } finally {
    await fh.close();
  }
}
