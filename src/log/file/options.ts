import type { ReadObserver } from "./chunked-file.ts";

/** The part of a pino logger the file log uses. */
export interface WarnLogger {
  warn(obj: object, msg: string): void;
}

export interface FileLogOptions {
  /** A segment is sealed and the next one started once it has grown past this. Default 64 MiB. */
  readonly segmentBytes?: number;
  /**
   * "always" (default): every group commit is fdatasync'ed before any of its
   * appends resolve, so a resolved append survives a power loss.
   *
   * "never": appends resolve once the bytes are in the OS page cache. That
   * survives the process being killed, but NOT an OS crash or power loss:
   * acknowledged records may vanish and the last segment may need
   * `chronomad log repair`. For tests and benchmarks only. Sealed segments are
   * still synced when the log rolls over and on close.
   */
  readonly fsync?: "always" | "never";
  /**
   * What open() reads of sealed segments (all but the last). "indexes"
   * (default): only the index file each one got when it was sealed
   * (segment-index-file.ts), checked against the segment's header, length
   * and last record, so open time does not grow with the log; a missing or
   * damaged index file is rebuilt from its segment with a warning. Records
   * of sealed segments are then CRC-checked when they are read, and by
   * `chronomad log verify`. "full" reads and CRC-checks every record of
   * every segment (as open did before index files); "structure" reads every
   * frame header but checks no CRC. The last segment is always read whole
   * and CRC-checked because that is where torn writes are found.
   */
  readonly verifyOnOpen?: "indexes" | "full" | "structure";
  /** Bytes of frames between two sparse-index entries. Default 32 KiB. */
  readonly indexIntervalBytes?: number;
  /** Receives warnings such as a torn tail cut away on open. */
  readonly logger?: WarnLogger;
  /** Sees every read of segment data made by read() and tail(); for tests and diagnostics. */
  readonly onSegmentRead?: ReadObserver;
}

/** What inspectLog reads of sealed segments for a verifyOnOpen setting. */
export function sealedCheck(verifyOnOpen: FileLogOptions["verifyOnOpen"]): "indexes" | "crc" | "structure" {
  if (verifyOnOpen === "full") return "crc";
  return verifyOnOpen ?? "indexes";
}

export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
export const DEFAULT_INDEX_INTERVAL = 32 * 1024;
