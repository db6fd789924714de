import type { LogRecord } from "../../../log/event-log.ts";

/**
 * A run of consecutive log records as one transferable buffer: `count`
 * little-endian uint32 lengths, then the records' bytes back to back. Posted
 * with the buffer in the transfer list, it crosses to a thread without a
 * structured clone of any object: the sender pays one copy of the bytes,
 * the receiver none (its records are views into the buffer). A shared
 * buffer is posted as it is, to any number of threads, none of which
 * writes to it: one copy for all of them.
 */
export interface PackedRecords {
  /** Index of the first record; the others follow densely. */
  readonly first: number;
  readonly count: number;
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
}

/** Packs batches of records whose indexes run densely from the first one's (`shared`: into a SharedArrayBuffer). */
export function packRecords(batches: readonly (readonly LogRecord[])[], shared = false): PackedRecords {
  let count = 0;
  let bytes = 0;
  for (const b of batches) {
    count += b.length;
    for (const r of b) bytes += r.bytes.length;
  }
  const first = batches.find((b) => b.length > 0)?.[0]?.index ?? 0;
  const buffer = shared ? new SharedArrayBuffer(4 * count + bytes) : new ArrayBuffer(4 * count + bytes);
  const lengths = new DataView(buffer, 0, 4 * count);
  const body = new Uint8Array(buffer, 4 * count);
  let i = 0;
  let at = 0;
  for (const b of batches) {
    for (const r of b) {
      // A gap here would become a gap in the replica: fail where it is made.
      if (r.index !== first + i) throw new Error(`records not dense: expected ${first + i}, got ${r.index}`);
      lengths.setUint32(4 * i, r.bytes.length, true);
      body.set(r.bytes, at);
      at += r.bytes.length;
      i++;
    }
  }
  return { first, count, buffer };
}

/** The records of a packed run, as views into its buffer. */
export function unpackRecords(packed: PackedRecords): LogRecord[] {
  const { first, count, buffer } = packed;
  const lengths = new DataView(buffer, 0, 4 * count);
  const out: LogRecord[] = new Array(count);
  let at = 4 * count;
  for (let i = 0; i < count; i++) {
    const length = lengths.getUint32(4 * i, true);
    out[i] = { index: first + i, bytes: new Uint8Array(buffer, at, length) };
    at += length;
  }
  return out;
}
