import { readdir } from "node:fs/promises";
import { join } from "node:path";

/** Every file under `dir`, recursively: what a log-safety test scans for secrets. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}
