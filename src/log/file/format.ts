import { crc32c } from "./crc32c.ts";

/**
 * On-disk layout of one segment file:
 *
 *   header (24 bytes)
 *     0  magic "CMLOGSEG" (8 bytes)
 *     8  format version, u32 LE
 *    12  header CRC-32C (masked) over bytes 0..11 and 16..23, u32 LE
 *    16  index of the first record, u64 LE
 *   frames, back to back until the end of the file
 *     0  payload length, u32 LE
 *     4  masked CRC-32C of the payload, u32 LE
 *     8  payload
 *
 * A record's index is the segment's first index plus its position, so frames
 * carry no index of their own.
 */
export const MAGIC = Buffer.from("CMLOGSEG", "latin1");
export const FORMAT_VERSION = 1;
export const HEADER_SIZE = 24;
export const FRAME_HEADER_SIZE = 8;
/** Larger than any sane event; a length above this is treated as damage, not as a record. */
export const MAX_RECORD_BYTES = 0x7fff_ffff;

const SEGMENT_NAME = /^(\d{20})\.seg$/;

export function segmentFileName(firstIndex: number): string {
  return `${String(firstIndex).padStart(20, "0")}.seg`;
}

/** The first index encoded in a segment's file name, or undefined for any other file. */
export function parseSegmentFileName(name: string): number | undefined {
  const m = SEGMENT_NAME.exec(name);
  if (!m) return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/**
 * The CRC is stored masked (rotated and offset, as LevelDB and the Snappy
 * framing format do). An empty payload has a plain CRC-32C of 0, so without
 * the mask a run of zero bytes - what a crash can leave at the end of a file
 * whose size was extended before its data reached the disk - would decode as
 * an endless series of valid empty records. Masked, zero bytes never checksum.
 */
export function maskCrc(crc: number): number {
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

export function frameChecksum(data: Uint8Array, start = 0, end = data.length): number {
  return maskCrc(crc32c(data, start, end));
}

export function encodeSegmentHeader(firstIndex: number): Buffer {
  const h = Buffer.alloc(HEADER_SIZE);
  MAGIC.copy(h, 0);
  h.writeUInt32LE(FORMAT_VERSION, 8);
  h.writeBigUInt64LE(BigInt(firstIndex), 16);
  h.writeUInt32LE(headerChecksum(h), 12);
  return h;
}

function headerChecksum(h: Uint8Array): number {
  return maskCrc(crc32c(h, 16, 24, crc32c(h, 0, 12)));
}

/** The first index a header declares, or why the header cannot be trusted. */
export function decodeSegmentHeader(h: Buffer): { firstIndex: number } | { problem: string } {
  if (h.length < HEADER_SIZE) return { problem: "segment header is incomplete" };
  if (!h.subarray(0, 8).equals(MAGIC)) return { problem: "bad segment magic (not a chronomad log segment)" };
  if (h.readUInt32LE(12) !== headerChecksum(h)) return { problem: "segment header checksum mismatch" };
  const version = h.readUInt32LE(8);
  if (version !== FORMAT_VERSION) return { problem: `unsupported segment format version ${version}` };
  const first = h.readBigUInt64LE(16);
  if (first < 1n || first > BigInt(Number.MAX_SAFE_INTEGER)) return { problem: `bad first index ${first}` };
  return { firstIndex: Number(first) };
}
