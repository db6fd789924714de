import type { LogRecord } from "../event-log.ts";
import { FRAME_HEADER_SIZE, frameChecksum } from "./format.ts";

export interface EncodedCommit {
  /** Every frame of the commit, back to back: written with one write. */
  readonly buf: Buffer;
  readonly records: number;
  /** Sparse-index entries for the commit as flat (index, file offset) pairs. */
  readonly indexEntries: number[];
}

/**
 * Frames the batches of one group commit into a single buffer, allocated
 * once at its final size: no per-record allocations, and one write call.
 * `fileOffset` is where the buffer will land in the segment, so that the
 * sparse-index entries can be computed on the way.
 */
export function encodeCommit(
  batches: Iterable<readonly Uint8Array[]>,
  frameBytes: number,
  firstIndex: number,
  fileOffset: number,
  indexIntervalBytes: number,
): EncodedCommit {
  const buf = Buffer.allocUnsafe(frameBytes);
  const indexEntries: number[] = [];
  let off = 0;
  let index = firstIndex;
  // Every commit gets an entry for its first record, so that a reader of
  // freshly appended records (a tail catching up) never starts further back
  // than the start of the commit.
  let sinceEntry = indexIntervalBytes;
  for (const batch of batches) {
    for (const r of batch) {
      if (sinceEntry >= indexIntervalBytes) {
        indexEntries.push(index, fileOffset + off);
        sinceEntry = 0;
      }
      const size = FRAME_HEADER_SIZE + r.length;
      buf.writeUInt32LE(r.length, off);
      buf.set(r, off + FRAME_HEADER_SIZE);
      // Over the copy in `buf`, not `r`: records come as Buffers (msgpackr)
      // or as Uint8Array views (a scheduler thread's bytes), and crc32c,
      // optimized on one, deoptimized on the other in every cold server.
      buf.writeUInt32LE(frameChecksum(buf, off + FRAME_HEADER_SIZE, off + size), off + 4);
      off += size;
      sinceEntry += size;
      index++;
    }
  }
  return { buf, records: index - firstIndex, indexEntries };
}

/**
 * The records of an encoded commit, in batches of at most `batchSize`, as
 * views into its buffer: the buffer is never reused, so the views stay valid.
 */
export function* recordsOfCommit(buf: Buffer, firstIndex: number, batchSize: number): Generator<LogRecord[]> {
  let batch: LogRecord[] = [];
  let index = firstIndex;
  for (let off = 0; off < buf.length; index++) {
    const length = buf.readUInt32LE(off);
    const start = off + FRAME_HEADER_SIZE;
    batch.push({ index, bytes: buf.subarray(start, start + length) });
    off = start + length;
    if (batch.length === batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
