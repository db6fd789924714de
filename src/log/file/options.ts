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
   * What open() checks in sealed segments. "full" (default) checks every
   * record's CRC; "structure" checks only that frames tile each file. open()
   * reads every byte of every segment either way (that is how the sparse index
   * is rebuilt), and CRC-32C runs at about 1 GB/s, so full verification adds
   * little to the cost of the reads themselves; "structure" is for very large
   * logs on slow CPUs. The last segment is always CRC-checked because that is
   * where torn writes are found.
   */
  readonly verifyOnOpen?: "full" | "structure";
  /** Bytes of frames between two sparse-index entries. Default 32 KiB. */
  readonly indexIntervalBytes?: number;
  /** Receives warnings such as a torn tail cut away on open. */
  readonly logger?: WarnLogger;
  /** Sees every read of segment data made by read() and tail(); for tests and diagnostics. */
  readonly onSegmentRead?: ReadObserver;
}

export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
export const DEFAULT_INDEX_INTERVAL = 32 * 1024;
