import { open } from "node:fs/promises";
import { ChunkedFile } from "./chunked-file.ts";
import {
  decodeSegmentHeader,
  FRAME_HEADER_SIZE,
  frameChecksum,
  HEADER_SIZE,
  MAX_RECORD_BYTES,
} from "./format.ts";

export interface ScanProblem {
  /** Byte offset of the frame (or header) that is bad. */
  readonly offset: number;
  /** Index the bad record would have had; undefined for a bad header. */
  readonly index?: number;
  readonly reason: string;
  /**
   * True when the damage is a torn tail: nothing valid follows it, so it is
   * an append that never completed and may be cut off. Only decided when the
   * scan was asked to classify the tail (the last segment); false otherwise.
   */
  readonly tornTail: boolean;
}

export interface SegmentScan {
  readonly path: string;
  /** From the header, or from the file name when the header is unreadable. */
  readonly firstIndex: number;
  /** Valid records before the end or before the problem. */
  readonly records: number;
  /** Offset just after the last valid frame (the header size for an empty segment). */
  readonly validEnd: number;
  readonly fileSize: number;
  readonly problem?: ScanProblem;
}

export interface ScanOptions {
  /** Check each payload's CRC, not only that the frames tile the file. */
  readonly verifyCrc: boolean;
  /** Decide whether a problem is a torn tail (only meaningful for the last segment). */
  readonly classifyTail: boolean;
  /** Called for every valid frame in order; used to build the sparse index. */
  readonly onFrame?: (index: number, offset: number, payloadLength: number) => void;
  /** Stop after this index (inclusive): repair only needs the prefix it keeps. */
  readonly untilIndex?: number;
  /**
   * Go on from a frame boundary an earlier scan of this file reached (its
   * header and the frames before were checked then): a reader following a
   * segment that grows reads only the new bytes.
   */
  readonly resumeAt?: { readonly offset: number; readonly index: number };
}

const SCAN_CHUNK = 1 << 20;

/**
 * Walks one segment frame by frame, reading it sequentially in 1 MiB chunks,
 * and reports the first problem. Never writes.
 */
export async function scanSegment(
  path: string,
  nameFirstIndex: number,
  options: ScanOptions,
): Promise<SegmentScan> {
  const fh = await open(path, "r");
  try {
    const fileSize = (await fh.stat()).size;
    const file = new ChunkedFile(fh, path, fileSize, SCAN_CHUNK);
    const base = { path, fileSize, records: 0, validEnd: 0, firstIndex: nameFirstIndex };

    if (options.resumeAt) return await walkFrames(file, base, nameFirstIndex, options.resumeAt, options);
    if (fileSize < HEADER_SIZE) {
      // A segment is created and its header made durable before any record is
      // written to it, so a short header can only be a creation cut short.
      const reason = `segment header is incomplete (${fileSize} of ${HEADER_SIZE} bytes)`;
      return { ...base, problem: { offset: 0, reason, tornTail: options.classifyTail } };
    }
    const header = decodeSegmentHeader((await file.at(0, HEADER_SIZE)).subarray(0, HEADER_SIZE));
    if ("problem" in header) {
      const torn = options.classifyTail && (await isAllZero(file, 0, fileSize));
      return { ...base, problem: { offset: 0, reason: header.problem, tornTail: torn } };
    }
    if (header.firstIndex !== nameFirstIndex) {
      const reason = `header says first index ${header.firstIndex} but the file name says ${nameFirstIndex}`;
      return { ...base, problem: { offset: 0, reason, tornTail: false } };
    }

    return await walkFrames(
      file,
      base,
      header.firstIndex,
      { offset: HEADER_SIZE, index: header.firstIndex },
      options,
    );
  } finally {
    await fh.close();
  }
}

/** The frames of a segment whose header holds, from `start` (a frame boundary) to the end or the first problem. */
async function walkFrames(
  file: ChunkedFile,
  base: { path: string; fileSize: number },
  first: number,
  start: { readonly offset: number; readonly index: number },
  options: ScanOptions,
): Promise<SegmentScan> {
  const { fileSize } = base;
  const until = options.untilIndex ?? Number.POSITIVE_INFINITY;
  let pos = start.offset;
  let index = start.index;
  const bad = async (reason: string): Promise<SegmentScan> => {
    const tornTail = options.classifyTail && !(await hasValidFrameAfter(file, pos, fileSize));
    return {
      ...base,
      firstIndex: first,
      records: index - first,
      validEnd: pos,
      problem: { offset: pos, index, reason, tornTail },
    };
  };
  while (pos < fileSize && index <= until) {
    if (fileSize - pos < FRAME_HEADER_SIZE) return bad("incomplete frame header");
    let buf = file.peek(pos, FRAME_HEADER_SIZE) ?? (await file.at(pos, FRAME_HEADER_SIZE));
    let at = pos - file.chunkStart();
    const length = buf.readUInt32LE(at);
    if (length > MAX_RECORD_BYTES || length > fileSize - pos - FRAME_HEADER_SIZE) {
      return bad(`frame length ${length} runs past the end of the file`);
    }
    if (options.verifyCrc) {
      buf = file.peek(pos, FRAME_HEADER_SIZE + length) ?? (await file.at(pos, FRAME_HEADER_SIZE + length));
      at = pos - file.chunkStart();
      const stored = buf.readUInt32LE(at + 4);
      const payload = at + FRAME_HEADER_SIZE;
      if (frameChecksum(buf, payload, payload + length) !== stored) return bad("CRC mismatch");
    }
    options.onFrame?.(index, pos, length);
    pos += FRAME_HEADER_SIZE + length;
    index++;
  }
  return { ...base, firstIndex: first, records: index - first, validEnd: pos };
}

async function isAllZero(file: ChunkedFile, from: number, to: number): Promise<boolean> {
  for (let pos = from; pos < to; ) {
    const n = Math.min(SCAN_CHUNK, to - pos);
    const buf = await file.at(pos, n);
    const at = pos - file.chunkStart();
    for (let i = at; i < at + n; i++) if (buf[i] !== 0) return false;
    pos += n;
  }
  return true;
}

/**
 * Whether any byte offset after `from` starts a frame whose checksum holds.
 * This is what separates a torn tail (an append cut short, garbage or zeros
 * up to the end) from damage in the middle of acknowledged data, which must
 * never be cut away silently. Slow in theory, but it only runs on a damaged
 * segment, over the bytes after the damage.
 */
async function hasValidFrameAfter(file: ChunkedFile, from: number, fileSize: number): Promise<boolean> {
  const rest = fileSize - from;
  if (rest <= FRAME_HEADER_SIZE) return false;
  const buf = await file.at(from, rest);
  const at = from - file.chunkStart();
  const view = buf.subarray(at, at + rest);
  return findValidFrame(view, 1) >= 0;
}

/** Offset of the first position >= `start` in `buf` holding a complete frame with a good CRC, or -1. */
export function findValidFrame(buf: Buffer, start: number): number {
  for (let q = start; q + FRAME_HEADER_SIZE <= buf.length; q++) {
    const length = buf.readUInt32LE(q);
    if (length > buf.length - q - FRAME_HEADER_SIZE) continue;
    const payload = q + FRAME_HEADER_SIZE;
    if (frameChecksum(buf, payload, payload + length) === buf.readUInt32LE(q + 4)) return q;
  }
  return -1;
}
