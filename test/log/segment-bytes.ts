import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * An independent reading of the segment format (24-byte header, then
 * length + CRC + payload frames), so tests can find frame offsets without
 * trusting the code under test.
 */
export function frameOffsets(segment: Buffer): number[] {
  const offsets: number[] = [];
  for (let pos = 24; pos + 8 <= segment.length; ) {
    offsets.push(pos);
    pos += 8 + segment.readUInt32LE(pos);
  }
  return offsets;
}

export async function segmentNames(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith(".seg")).sort();
}

/** Name and SHA-256 of every file in `dir`, to prove nothing changed. */
export async function hashDir(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) {
    out[name] = createHash("sha256")
      .update(await readFile(join(dir, name)))
      .digest("hex");
  }
  return out;
}
