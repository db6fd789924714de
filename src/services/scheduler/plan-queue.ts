import type { AllocsPlanApplied } from "../../../streams/allocs.ts";
import type { Outcome } from "../../store/projection.ts";
import { isEncoded, type Writable, type Written } from "../../store/writer.ts";

/** Most records one append carries. */
export const MAX_RECORDS_PER_APPEND = 256;
/**
 * Most allocations one append changes (a plan record places up to 1,000).
 * Applying a batch runs without a break on the event loop: batching must
 * not turn several large plans into one long apply. A submission larger
 * than this still goes, alone.
 */
export const MAX_ALLOCS_PER_APPEND = 2_000;

/** What the queue holds and has done, for `/v1/metrics`. */
export interface PlanQueueStats {
  /** Submissions waiting for the next append (Nomad's plan queue depth). */
  readonly depth: number;
  /** Submissions in the append under way. */
  readonly inFlight: number;
  /** Appends so far, and the records and submissions they carried. */
  readonly appends: number;
  readonly records: number;
  readonly submissions: number;
}

export interface PlanQueueOptions {
  readonly maxRecords?: number;
  /**
   * Appends under way at once (default 1). With two, the next batch is
   * queued in the log while the one ahead is being synced, and the log
   * writes it before it publishes the one ahead (FileLog's group commit),
   * so applying a batch overlaps the disk's work on the next.
   */
  readonly maxAppends?: number;
  readonly maxAllocs?: number;
  /** After each append is applied: how long it took (ms) and how many submissions it carried. */
  readonly onAppended?: (ms: number, records: number, submissions: number) => void;
}

interface Submission {
  readonly drafts: readonly Writable[];
  /** Allocations its records change. */
  readonly allocs: number;
  readonly resolve: (w: Written) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The scheduler's group commit: the records of every evaluation that
 * finishes a step while an append is under way (plans, follow-up and
 * blocked evaluations, status updates) go out together in the next append,
 * each submission still its own contiguous run of records with its own
 * outcomes. At most `maxAppends` appends are under way at a time, so under
 * load batches grow with the log's latency instead of each evaluation
 * paying for its own durable write and apply; alone, a submission waits for
 * one turn of the event loop (every worker whose step finished in that turn
 * joins it).
 *
 * Records are what they would be without it: one evaluation per status
 * record (event-stream subscribers get one evaluation per frame, as Nomad's
 * clients expect), each record fenced by the leadership epoch and checked at
 * apply on its own.
 */
export class PlanQueue {
  private queue: Submission[] = [];
  /** Submissions in the appends under way. */
  private writing = 0;
  private appending = 0;
  private scheduled = false;
  private appends = 0;
  private records = 0;
  private submissions = 0;
  private readonly maxRecords: number;
  private readonly maxAllocs: number;
  private readonly maxAppends: number;

  constructor(
    private readonly write: (records: readonly Writable[]) => Promise<Written>,
    private readonly options: PlanQueueOptions = {},
  ) {
    this.maxRecords = Math.max(1, options.maxRecords ?? MAX_RECORDS_PER_APPEND);
    this.maxAllocs = Math.max(1, options.maxAllocs ?? MAX_ALLOCS_PER_APPEND);
    this.maxAppends = Math.max(1, Math.floor(options.maxAppends ?? 1));
  }

  /** Appends `drafts` with whatever else is waiting; resolves with their own outcomes once applied. */
  submit(drafts: readonly Writable[]): Promise<Written> {
    if (drafts.length === 0) return Promise.reject(new Error("a plan queue submission needs a record"));
    return new Promise<Written>((resolve, reject) => {
      this.queue.push({ drafts, allocs: allocsOf(drafts), resolve, reject });
      this.kick();
    });
  }

  stats(): PlanQueueStats {
    return {
      depth: this.queue.length,
      inFlight: this.writing,
      appends: this.appends,
      records: this.records,
      submissions: this.submissions,
    };
  }

  private kick(): void {
    if (this.appending >= this.maxAppends || this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    // A turn of the event loop, not a microtask: a worker's step ends in a
    // chain of awaits, and the whole chain of every worker resumed by the
    // last apply should make it into this append.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.appending >= this.maxAppends || this.queue.length === 0) return;
    const batch: Submission[] = [];
    let records = 0;
    let allocs = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      const full = records + next.drafts.length > this.maxRecords || allocs + next.allocs > this.maxAllocs;
      if (batch.length > 0 && full) break;
      batch.push(this.queue.shift()!);
      records += next.drafts.length;
      allocs += next.allocs;
    }
    const drafts: Writable[] = [];
    for (const s of batch) for (const d of s.drafts) drafts.push(d);
    this.writing += batch.length;
    this.appending++;
    const started = performance.now();
    try {
      const written = await this.write(drafts);
      this.appends++;
      this.records += drafts.length;
      this.submissions += batch.length;
      this.options.onAppended?.(performance.now() - started, drafts.length, batch.length);
      let at = 0;
      for (const s of batch) {
        const outcomes: Outcome[] = written.outcomes.slice(at, at + s.drafts.length);
        at += s.drafts.length;
        s.resolve({ index: outcomes[outcomes.length - 1]!.index, outcomes });
      }
    } catch (err) {
      for (const s of batch) s.reject(err);
    } finally {
      this.writing -= batch.length;
      this.appending--;
      this.kick();
    }
  }
}

/** The allocations a run of records changes: what applying them costs, roughly. */
function allocsOf(records: readonly Writable[]): number {
  let n = 0;
  for (const r of records) {
    if (isEncoded(r)) n += r.allocs;
    else if (r.type === "AllocsPlanApplied") n += allocsOfPlan(r.data as AllocsPlanApplied);
  }
  return n;
}

/** The allocations one plan record changes. */
export function allocsOfPlan(p: AllocsPlanApplied): number {
  return (
    p.Placed.length +
    p.Updated.length +
    p.Stopped.length +
    p.Preempted.length +
    (p.Placements?.length ?? 0) +
    (p.InPlace?.length ?? 0) +
    (p.Disconnected?.length ?? 0) +
    (p.Reconnected?.length ?? 0) +
    (p.Followups?.length ?? 0) +
    (p.Preemptions?.length ?? 0)
  );
}
