import type { Observable } from "rxjs";

/**
 * One record of the log: its cluster index and the encoded envelope bytes.
 * The log never interprets the bytes; the codec does.
 */
export interface LogRecord {
  readonly index: number;
  readonly bytes: Uint8Array;
}

/** Indexes given to one appended batch, in append order: first..last inclusive. */
export interface AppendResult {
  readonly first: number;
  readonly last: number;
}

/**
 * The append-only log every backend implements. Indexes start at 1 and are
 * dense: the record after index N is N+1, whoever wrote it. That index is the
 * cluster index (Nomad's Raft index).
 */
export interface EventLog {
  /** A short description for logs and `/v1/agent/self`, e.g. `file:/data/log`. */
  readonly url: string;

  /**
   * Appends a batch as one contiguous run. The promise resolves only when every
   * record of the batch is durable under the backend's policy, and the batch
   * is never interleaved with another writer's records.
   */
  append(records: readonly Uint8Array[]): Promise<AppendResult>;

  /**
   * Reads committed records from `fromIndex` (inclusive) in index order, in
   * batches of at most `maxBatch` records, up to the last index known when the
   * iteration reaches the end.
   */
  read(fromIndex: number, options?: ReadOptions): AsyncIterable<LogRecord[]>;

  /**
   * Every record from `fromIndex` on: first what is already committed, then
   * each new batch as it becomes durable. Never completes on its own; errors if
   * the backend fails. Unsubscribing releases the reader.
   */
  tail(fromIndex: number): Observable<LogRecord[]>;

  /** The index of the last durable record, 0 when the log is empty. */
  lastIndex(): number;

  /** The lowest index still held (1 unless the log was truncated at the front). */
  firstIndex(): number;

  /** Finishes in-flight appends, then releases files and connections. */
  close(): Promise<void>;
}

export interface ReadOptions {
  /** Largest batch handed to the caller at once. */
  readonly maxBatch?: number;
  /** Stop after this index (inclusive). */
  readonly untilIndex?: number;
}

/** Raised for problems the operator must act on (corruption, bad URL, closed log). */
export class LogError extends Error {
  constructor(
    message: string,
    readonly code: "corrupt" | "closed" | "config" | "io" | "range",
  ) {
    super(message);
    this.name = "LogError";
  }
}
