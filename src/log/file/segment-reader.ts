import { open } from "node:fs/promises";
import { LogError, type LogRecord } from "../event-log.ts";
import { ChunkedFile, type ReadObserver } from "./chunked-file.ts";
import { FRAME_HEADER_SIZE, frameChecksum, HEADER_SIZE } from "./format.ts";
import type { SparseIndex } from "./sparse-index.ts";

/** What a reader needs of a segment, frozen at the moment the read starts. */
export interface SegmentView {
  readonly path: string;
  readonly firstIndex: number;
  /** Last durable index in this segment. */
  readonly lastIndex: number;
  /** Byte offset just after that record's frame. */
  readonly end: number;
  readonly index: SparseIndex;
}

const READ_CHUNK = 256 * 1024;

/**
 * Records `from..until` of one segment, in batches of at most `maxBatch`.
 * Starts at the sparse-index entry nearest below `from`, so it reads at most
 * one index interval of frames it does not return. Only bytes up to the
 * durable end are read, so a segment being appended to is safe to read.
 */
export async function* readSegment(
  seg: SegmentView,
  from: number,
  until: number,
  maxBatch: number,
  observe?: ReadObserver,
): AsyncGenerator<LogRecord[]> {
  const stop = Math.min(until, seg.lastIndex);
  if (from > stop) return;
  const start = seg.index.seek(from) ?? { index: seg.firstIndex, offset: HEADER_SIZE };
  const fh = await open(seg.path, "r");
  try {
    const file = new ChunkedFile(fh, seg.path, seg.end, READ_CHUNK, observe);
    let pos = start.offset;
    let index = start.index;
    let batch: LogRecord[] = [];
    while (index <= stop) {
      let buf = file.peek(pos, FRAME_HEADER_SIZE) ?? (await file.at(pos, FRAME_HEADER_SIZE));
      const length = buf.readUInt32LE(pos - file.chunkStart());
      // Open no longer walks sealed segments' frames (their index files
      // stand in for that), so a damaged length is first met here.
      if (length > seg.end - pos - FRAME_HEADER_SIZE) {
        throw new LogError(
          `${seg.path} at byte offset ${pos} (record ${index}): frame length ${length} runs past the end of the segment`,
          "corrupt",
        );
      }
      if (index >= from) {
        buf = file.peek(pos, FRAME_HEADER_SIZE + length) ?? (await file.at(pos, FRAME_HEADER_SIZE + length));
        const at = pos - file.chunkStart();
        const payload = at + FRAME_HEADER_SIZE;
        if (frameChecksum(buf, payload, payload + length) !== buf.readUInt32LE(at + 4)) {
          throw new LogError(
            `${seg.path} at byte offset ${pos} (record ${index}): CRC mismatch on read`,
            "corrupt",
          );
        }
        batch.push({ index, bytes: buf.subarray(payload, payload + length) });
        if (batch.length >= maxBatch) {
          yield batch;
          batch = [];
        }
      }
      pos += FRAME_HEADER_SIZE + length;
      index++;
    }
    if (batch.length > 0) yield batch;
  } finally {
    await fh.close();
  }
}
