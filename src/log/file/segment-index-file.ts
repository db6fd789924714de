import { type FileHandle, open, readdir, readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import { crc32c } from "./crc32c.ts";
import { decodeSegmentHeader, FRAME_HEADER_SIZE, frameChecksum, HEADER_SIZE, maskCrc } from "./format.ts";
import type { SegmentFile } from "./segment-files.ts";
import { SparseIndex } from "./sparse-index.ts";

/**
 * The sparse index of a sealed segment, persisted beside it as
 * `<first index>.idx` when the segment is sealed, so that open() reads a few
 * KB per sealed segment instead of the segment itself:
 *
 *    0  magic "CMLOGIDX" (8 bytes)
 *    8  format version, u32 LE
 *   12  index interval in bytes it was built with, u32 LE
 *   16  the segment's first index, u64 LE
 *   24  records in the segment, u64 LE
 *   32  the segment's length in bytes, u64 LE
 *   40  byte offset of the segment's last frame, u64 LE
 *   48  that frame's stored (masked) CRC, u32 LE
 *   52  entries, u32 LE
 *   56  entries: record index u64 LE, byte offset u64 LE
 *  end  masked CRC-32C of every byte before it, u32 LE
 *
 * The facts about the segment let open() check, with two small reads, that
 * the index still describes the file beside it (same length, same header,
 * same last record); an index that does not is rebuilt from its segment.
 */
const MAGIC = Buffer.from("CMLOGIDX", "latin1");
const VERSION = 1;
const FIXED = 56;
const ENTRY = 16;
const TRAILER = 4;

/** What an index file records about its segment. */
export interface SealedSegmentFacts {
  readonly firstIndex: number;
  readonly records: number;
  /** Bytes in the segment file: its last frame ends there. */
  readonly byteLength: number;
  readonly lastFrameOffset: number;
}

export interface LoadedSegmentIndex extends SealedSegmentFacts {
  readonly index: SparseIndex;
}

export function indexFilePath(segmentPath: string): string {
  return segmentPath.replace(/\.seg$/, ".idx");
}

/** A write cut short leaves this behind; open() removes it, and nothing ever reads it. */
export function indexTempPath(segmentPath: string): string {
  return `${indexFilePath(segmentPath)}.tmp`;
}

/**
 * Writes the index of a sealed segment: to a temporary file, then renamed
 * over the index file, so a crash leaves the old file, the new one or none,
 * never a torn one under the final name. `sync` fsyncs the temporary file
 * before the rename (the log's fsync policy); the rename itself becomes
 * durable with the next sync of the directory, which the caller does.
 */
export async function writeSegmentIndex(
  segmentPath: string,
  facts: SealedSegmentFacts,
  index: SparseIndex,
  intervalBytes: number,
  sync: boolean,
): Promise<void> {
  const lastFrameCrc = await readLastFrameCrc(segmentPath, facts);
  const { indexes, offsets } = thinned(index, intervalBytes);
  const buf = Buffer.alloc(FIXED + indexes.length * ENTRY + TRAILER);
  MAGIC.copy(buf, 0);
  buf.writeUInt32LE(VERSION, 8);
  buf.writeUInt32LE(Math.min(intervalBytes, 0xffff_ffff), 12);
  buf.writeBigUInt64LE(BigInt(facts.firstIndex), 16);
  buf.writeBigUInt64LE(BigInt(facts.records), 24);
  buf.writeBigUInt64LE(BigInt(facts.byteLength), 32);
  buf.writeBigUInt64LE(BigInt(facts.lastFrameOffset), 40);
  buf.writeUInt32LE(lastFrameCrc, 48);
  buf.writeUInt32LE(indexes.length, 52);
  for (const [i, n] of indexes.entries()) {
    buf.writeBigUInt64LE(BigInt(n), FIXED + i * ENTRY);
    buf.writeBigUInt64LE(BigInt(offsets[i]!), FIXED + i * ENTRY + 8);
  }
  const end = buf.length - TRAILER;
  buf.writeUInt32LE(maskCrc(crc32c(buf, 0, end)), end);

  const tmp = indexTempPath(segmentPath);
  const fh = await open(tmp, "w");
  try {
    await fh.writeFile(buf);
    if (sync) await fh.datasync();
  } finally {
    await fh.close();
  }
  await rename(tmp, indexFilePath(segmentPath));
}

/**
 * The entries at least `intervalBytes` apart. A segment being appended to
 * gets an entry for every commit (so a tail catching up never starts
 * before its commit); once sealed, that density would only cost space.
 */
function thinned(index: SparseIndex, intervalBytes: number): { indexes: number[]; offsets: number[] } {
  const all = index.entries();
  const indexes: number[] = [];
  const offsets: number[] = [];
  let last = Number.NEGATIVE_INFINITY;
  for (const [i, offset] of all.offsets.entries()) {
    if (offset - last < intervalBytes) continue;
    indexes.push(all.indexes[i]!);
    offsets.push(offset);
    last = offset;
  }
  return { indexes, offsets };
}

/** The stored CRC of the segment's last frame, checking that the frame ends the segment. */
async function readLastFrameCrc(segmentPath: string, facts: SealedSegmentFacts): Promise<number> {
  const fh = await open(segmentPath, "r");
  try {
    const frame = await readAt(fh, facts.lastFrameOffset, FRAME_HEADER_SIZE);
    if (facts.lastFrameOffset + FRAME_HEADER_SIZE + frame.readUInt32LE(0) !== facts.byteLength) {
      throw new Error(`the frame at byte offset ${facts.lastFrameOffset} does not end ${segmentPath}`);
    }
    return frame.readUInt32LE(4);
  } finally {
    await fh.close();
  }
}

/**
 * A sealed segment's index, read from its index file and checked against
 * the segment; or why it cannot be used ("missing" when there is none).
 * Reads the index file, the segment's header and its last frame: never the
 * rest of the segment.
 */
export async function loadSegmentIndex(
  file: SegmentFile,
  intervalBytes: number,
): Promise<LoadedSegmentIndex | { readonly problem: string }> {
  let buf: Buffer;
  try {
    buf = await readFile(indexFilePath(file.path));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { problem: "missing" };
    return { problem: `unreadable: ${(err as Error).message}` };
  }
  const decoded = decodeIndex(buf, file.firstIndex, intervalBytes);
  if ("problem" in decoded) return decoded;
  const mismatch = await segmentMismatch(file.path, decoded, decoded.lastFrameCrc);
  return mismatch === undefined ? decoded : { problem: mismatch };
}

function decodeIndex(
  buf: Buffer,
  nameFirstIndex: number,
  intervalBytes: number,
): (LoadedSegmentIndex & { readonly lastFrameCrc: number }) | { readonly problem: string } {
  if (buf.length < FIXED + TRAILER) return { problem: `too short (${buf.length} bytes)` };
  if (!buf.subarray(0, 8).equals(MAGIC)) return { problem: "bad magic (not a chronomad segment index)" };
  const end = buf.length - TRAILER;
  if (maskCrc(crc32c(buf, 0, end)) !== buf.readUInt32LE(end)) return { problem: "checksum mismatch" };
  const version = buf.readUInt32LE(8);
  if (version !== VERSION) return { problem: `unsupported index format version ${version}` };
  const count = buf.readUInt32LE(52);
  if (buf.length !== FIXED + count * ENTRY + TRAILER) {
    return { problem: `length ${buf.length} does not hold its ${count} entries` };
  }
  const u64 = (at: number) => {
    const n = buf.readBigUInt64LE(at);
    return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : Number.NaN;
  };
  const firstIndex = u64(16);
  const records = u64(24);
  const byteLength = u64(32);
  const lastFrameOffset = u64(40);
  if (firstIndex !== nameFirstIndex) {
    return { problem: `it is for a segment starting at ${firstIndex}, not ${nameFirstIndex}` };
  }
  if (
    !(records >= 1) ||
    !(lastFrameOffset >= HEADER_SIZE) ||
    !(lastFrameOffset + FRAME_HEADER_SIZE <= byteLength)
  ) {
    return {
      problem: `inconsistent facts (${records} records, last frame at ${lastFrameOffset} of ${byteLength})`,
    };
  }
  const indexes: number[] = [];
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) {
    const n = u64(FIXED + i * ENTRY);
    const offset = u64(FIXED + i * ENTRY + 8);
    const inOrder = i === 0 || (n > indexes[i - 1]! && offset > offsets[i - 1]!);
    if (
      !inOrder ||
      n < firstIndex ||
      n >= firstIndex + records ||
      offset < HEADER_SIZE ||
      offset > lastFrameOffset
    ) {
      return { problem: `entry ${i} (record ${n} at byte ${offset}) is out of order or outside the segment` };
    }
    indexes.push(n);
    offsets.push(offset);
  }
  return {
    firstIndex,
    records,
    byteLength,
    lastFrameOffset,
    lastFrameCrc: buf.readUInt32LE(48),
    index: SparseIndex.of(intervalBytes, indexes, offsets),
  };
}

/** Why the segment is not the one the index describes, or undefined if it is. */
async function segmentMismatch(
  path: string,
  facts: SealedSegmentFacts,
  lastFrameCrc: number,
): Promise<string | undefined> {
  const fh = await open(path, "r");
  try {
    const size = (await fh.stat()).size;
    if (size !== facts.byteLength)
      return `the segment is ${size} bytes, the index describes ${facts.byteLength}`;
    const header = decodeSegmentHeader(await readAt(fh, 0, HEADER_SIZE));
    if ("problem" in header) return `the segment's header is bad: ${header.problem}`;
    if (header.firstIndex !== facts.firstIndex) {
      return `the segment's header says first index ${header.firstIndex}, the index ${facts.firstIndex}`;
    }
    const frameLength = facts.byteLength - facts.lastFrameOffset - FRAME_HEADER_SIZE;
    const frame = await readAt(fh, facts.lastFrameOffset, FRAME_HEADER_SIZE + frameLength);
    if (frame.readUInt32LE(0) !== frameLength || frame.readUInt32LE(4) !== lastFrameCrc) {
      return `the segment's last record is not the one the index describes (byte offset ${facts.lastFrameOffset})`;
    }
    if (frameChecksum(frame, FRAME_HEADER_SIZE) !== lastFrameCrc) {
      return `the segment's last record fails its CRC (byte offset ${facts.lastFrameOffset})`;
    }
    return undefined;
  } finally {
    await fh.close();
  }
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/** Removes a file that may not exist. */
export async function removeIfPresent(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

/** Removes what index writes cut short by a crash left behind; returns their names. */
export async function removeLeftoverIndexTemps(dir: string): Promise<string[]> {
  const leftovers = (await readdir(dir)).filter((n) => n.endsWith(".idx.tmp"));
  for (const name of leftovers) await removeIfPresent(join(dir, name));
  return leftovers;
}
