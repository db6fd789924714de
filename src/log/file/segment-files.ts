import { open, readdir } from "node:fs/promises";
import { join } from "node:path";
import { LogError } from "../event-log.ts";
import { parseSegmentFileName } from "./format.ts";

export interface SegmentFile {
  readonly path: string;
  readonly name: string;
  readonly firstIndex: number;
}

/** The segment files of a log directory, oldest first. Other files are ignored. */
export async function listSegmentFiles(dir: string): Promise<SegmentFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      throw new LogError(`log directory ${dir} does not exist`, "config");
    }
    throw err;
  }
  const files: SegmentFile[] = [];
  for (const name of names) {
    const firstIndex = parseSegmentFileName(name);
    if (firstIndex !== undefined) files.push({ path: join(dir, name), name, firstIndex });
  }
  return files.sort((a, b) => a.firstIndex - b.firstIndex);
}

/**
 * Makes a directory's entries durable: on Linux a new or removed file is only
 * guaranteed to survive a power loss once its directory has been fsynced.
 */
export async function syncDirectory(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
