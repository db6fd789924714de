import type { AppendResult } from "../event-log.ts";

/**
 * Sends one batch as a single, contiguous run and returns the index the log
 * gave its first record (from the broker's answer, never from a local count:
 * other servers write to the same log).
 */
export type BatchSender = (records: readonly Buffer[]) => Promise<number>;

export interface GroupCommitLimits {
  /** A send stops taking more appends once it would exceed this many payload bytes. */
  readonly maxBatchBytes: number;
  /** ...or this many records. A single larger append still goes out whole. */
  readonly maxBatchRecords: number;
}

interface Waiting {
  readonly records: readonly Buffer[];
  readonly bytes: number;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (error: unknown) => void;
}

// Per-record framing the broker adds (varints, attributes, headers count):
// counted so a batch of many tiny records still respects maxBatchBytes.
const RECORD_OVERHEAD = 24;

/**
 * One send at a time; appends that arrive while it is in flight ride together
 * in the next one (group commit). The idempotent producer is only safe with a
 * single request in flight (kafkajs#1005, #598), so throughput comes from
 * batching, not from concurrency. Each append's records stay adjacent inside
 * the send, which the broker writes as one record batch: contiguous offsets.
 */
export class GroupCommit {
  private readonly queue: Waiting[] = [];
  private inFlight: Promise<void> | undefined;
  private scheduled = false;

  constructor(
    private readonly send: BatchSender,
    private readonly limits: GroupCommitLimits,
  ) {}

  append(records: readonly Buffer[]): Promise<AppendResult> {
    return new Promise<AppendResult>((resolve, reject) => {
      let bytes = 0;
      for (const r of records) bytes += r.length + RECORD_OVERHEAD;
      this.queue.push({ records, bytes, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once everything appended so far has been answered. */
  async drain(): Promise<void> {
    while (this.inFlight || this.queue.length > 0 || this.scheduled) {
      await (this.inFlight ?? new Promise<void>((resolve) => setImmediate(resolve)));
    }
  }

  // The first send waits one microtask so appends issued in the same tick
  // (Promise.all over many appends) already share it.
  private schedule(): void {
    if (this.inFlight || this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.inFlight || this.queue.length === 0) return;
    const group = this.takeGroup();
    this.inFlight = this.sendGroup(group).finally(() => {
      this.inFlight = undefined;
      this.flush();
    });
  }

  private takeGroup(): Waiting[] {
    const group = [this.queue.shift()!];
    let bytes = group[0]!.bytes;
    let count = group[0]!.records.length;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (bytes + next.bytes > this.limits.maxBatchBytes) break;
      if (count + next.records.length > this.limits.maxBatchRecords) break;
      group.push(this.queue.shift()!);
      bytes += next.bytes;
      count += next.records.length;
    }
    return group;
  }

  private async sendGroup(group: readonly Waiting[]): Promise<void> {
    const records = group.length === 1 ? group[0]!.records : group.flatMap((w) => w.records);
    let first: number;
    try {
      first = await this.send(records);
    } catch (error) {
      for (const w of group) w.reject(error);
      return;
    }
    for (const w of group) {
      w.resolve({ first, last: first + w.records.length - 1 });
      first += w.records.length;
    }
  }
}
