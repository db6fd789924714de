import type { FlatRecord } from "./flat-records.ts";

/**
 * Where exported records go. A sink commits records together with the index
 * they bring it to, atomically: after a crash, `position()` is the last index
 * whose records are all delivered, and nothing after it is.
 */
export interface ExportSink {
  /** The last index fully delivered (0 for a new sink). */
  position(): Promise<number>;
  /** Delivers `records` and moves the position to `index`, all or nothing. */
  commit(records: readonly FlatRecord[], index: number): Promise<void>;
  close(): Promise<void>;
}

export type ExportFormat = "json" | "msgpack";
