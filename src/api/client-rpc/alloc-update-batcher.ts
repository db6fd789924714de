import { notAllowedToUpdateAllocs } from "../../../projections/nodes.ts";
import type { AllocsReconnected, ClientAllocUpdate } from "../../../streams/allocs.ts";
import type { EvaluationSpec, EvaluationsUpserted } from "../../../streams/evals.ts";
import type { Actor } from "../../../streams/event-schema.ts";
import { isUnresponsive } from "../../../streams/nodes.ts";
import type { Outcome } from "../../store/projection.ts";
import { TurnPacer } from "../../store/turn-pacer.ts";
import { type Writable, writeEvents } from "../../store/writer.ts";
import type { Timer } from "../../util/clock.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { allocClientUpdatedRecord, type PackedUpdates, packUpdates } from "./alloc-update-record.ts";

/** Nomad's batchUpdateInterval. */
export const ALLOC_UPDATE_WINDOW_MS = 50;

/**
 * Most allocation updates one AllocClientUpdated record carries; a window
 * with more is written as several records in one append. The store applies
 * the log a record at a time between its 5 ms slices, and one update costs
 * about 50-80 us to apply (decode, row, audit entries, fan-out): a placement
 * burst's windows held up to 3,600 updates (3 MB), a quarter of a second of
 * the event loop in one step. 64 keep a record near one slice.
 */
export const MAX_UPDATES_PER_RECORD = 64;

/** One Node.UpdateAlloc call, already validated against the tables. */
export interface AllocUpdateCall {
  readonly nodeID: string;
  readonly updates: readonly ClientAllocUpdate[];
  /** Allocations whose `unknown` state this update closes. */
  readonly reconnected: readonly string[];
  /** Evaluations the update triggers (alloc-failure, reconnect). */
  readonly evals: readonly EvaluationSpec[];
}

/**
 * A call waiting for its window's apply. Its updates only as the bytes they
 * were packed to: the update objects (and the request body their task
 * states come from) would otherwise live as long as the call waits, through
 * the window, the append and the apply behind a burst's backlog (p50 a
 * quarter of a second at 2,000 nodes, p99 seconds), and every young
 * collection meanwhile would copy them again.
 */
interface Waiting {
  readonly nodeID: string;
  readonly reconnected: readonly string[];
  readonly evals: readonly EvaluationSpec[];
  /** The updates, packed when the call was submitted. */
  readonly packed: PackedUpdates;
  resolve(index: number): void;
  reject(err: Error): void;
}

/**
 * Coalesces client allocation updates as Nomad does: every call that arrives
 * within one 50 ms window is written in one append, as AllocClientUpdated
 * events of at most `maxPerRecord` updates each (a call's updates are never
 * split), with the reconnects and evaluations they cause (evaluations
 * deduplicated per job), and every caller gets the same index. The window
 * runs on the injectable clock. Each call's updates are packed as it is
 * submitted, so the flush only copies bytes into its records.
 */
export class AllocUpdateBatcher {
  private queue: Waiting[] = [];
  private timer: Timer | undefined;
  private readonly writing = new Set<Promise<void>>();
  /**
   * A window's callers are answered a few dozen per turn of the event loop:
   * a burst's windows carry hundreds of calls, whose answers all at once
   * held the loop for tens of milliseconds after the apply that released them.
   */
  private readonly answers = new TurnPacer();
  /** Made once: a closure made in `submit` would keep the window's first call (its updates) alive until the flush. */
  private readonly flushWindow = () => this.flush();
  /** How many windows were written, and how many calls they carried (benchmarks read these). */
  windows = 0;
  calls = 0;

  constructor(
    private readonly ctx: ApiContext,
    private readonly windowMs = ALLOC_UPDATE_WINDOW_MS,
    private readonly maxPerRecord = MAX_UPDATES_PER_RECORD,
  ) {}

  /** Resolves with the index of the window's last record once it is applied; rejects with an ApiError if refused. */
  submit(call: AllocUpdateCall): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      // Throws (the promise rejects) if an update cannot be packed: only this
      // call fails, not the window it would have joined.
      const packed = packUpdates(call.updates);
      const { nodeID, reconnected, evals } = call;
      this.queue.push({ nodeID, reconnected, evals, packed, resolve, reject });
      this.timer ??= this.ctx.clock.setTimeout(this.flushWindow, this.windowMs);
    });
  }

  /** Writes what is queued now and waits for every window in flight. */
  async close(): Promise<void> {
    if (this.timer) this.ctx.clock.clearTimeout(this.timer);
    this.flush();
    await Promise.allSettled([...this.writing]);
  }

  private flush(): void {
    this.timer = undefined;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    const done = this.write(batch);
    this.writing.add(done);
    void done.finally(() => this.writing.delete(done));
  }

  private async write(batch: readonly Waiting[]): Promise<void> {
    const evals = dedupePerJob(batch.flatMap((c) => c.evals));
    let pending = batch;
    while (pending.length > 0) {
      const records = perRecord(pending, this.maxPerRecord);
      let written: Awaited<ReturnType<typeof writeEvents>>;
      try {
        written = await writeEvents(
          this.ctx.store,
          this.ctx.clock.now(),
          this.actor(),
          drafts(records, pending, evals),
        );
      } catch (err) {
        for (const c of pending) c.reject(err as Error);
        return;
      }
      this.windows++;
      this.calls += pending.length;
      // Each update record is checked at apply on its own: the callers of
      // the records that applied are answered, the others looked at again.
      const refusedCalls: Waiting[] = [];
      let refused: Extract<Outcome, { status: "rejected" }> | undefined;
      for (let i = 0; i < records.length; i++) {
        const outcome = written.outcomes[i];
        if (outcome?.status === "rejected") {
          refused ??= outcome;
          refusedCalls.push(...records[i]!);
        } else for (const c of records[i]!) this.answers.run(() => c.resolve(written.index));
      }
      if (!refused) return;
      // A reporting node went down or disconnected after its call was
      // accepted: its callers get the refusal, the others are written again
      // (with the same evaluation IDs, so nothing is created twice).
      const stillAllowed: Waiting[] = [];
      for (const c of refusedCalls) {
        const node = this.ctx.tables.nodes.get(c.nodeID);
        if (!node) c.reject(ApiError.notFound(`node ${c.nodeID} not found`));
        else if (isUnresponsive(node.Status))
          c.reject(new ApiError(409, notAllowedToUpdateAllocs(c.nodeID, node.Status)));
        else stillAllowed.push(c);
      }
      if (stillAllowed.length === refusedCalls.length) {
        for (const c of refusedCalls) c.reject(new ApiError(refused.code, refused.reason));
        return;
      }
      pending = stillAllowed;
    }
  }

  /**
   * A window carries many nodes' updates; the server writes it, and each
   * update names the node that reported it.
   */
  private actor(): Actor {
    return { kind: "server", id: this.ctx.config.serverName, name: "client-alloc-updates" };
  }
}

/** The calls in runs of at most `max` updates (a call with more has a run of its own), in order. */
function perRecord(calls: readonly Waiting[], max: number): Waiting[][] {
  const runs: Waiting[][] = [];
  let run: Waiting[] = [];
  let updates = 0;
  for (const c of calls) {
    if (run.length > 0 && updates + c.packed.count > max) {
      runs.push(run);
      run = [];
      updates = 0;
    }
    run.push(c);
    updates += c.packed.count;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** One AllocClientUpdated per run of calls (first, so outcome i is run i's), then reconnects and evaluations. */
function drafts(
  records: readonly (readonly Waiting[])[],
  calls: readonly Waiting[],
  allEvals: readonly EvaluationSpec[],
): Writable[] {
  const out: Writable[] = records.map((run) => allocClientUpdatedRecord(run.map((c) => c.packed)));
  const reconnectedByNode = new Map<string, string[]>();
  for (const c of calls) {
    if (c.reconnected.length === 0) continue;
    const list = reconnectedByNode.get(c.nodeID) ?? [];
    list.push(...c.reconnected);
    reconnectedByNode.set(c.nodeID, list);
  }
  for (const [nodeID, ids] of reconnectedByNode) {
    const data: AllocsReconnected = { NodeID: nodeID, AllocIDs: [...new Set(ids)] };
    out.push({ type: "AllocsReconnected", v: 1, data });
  }
  const jobs = new Set(calls.flatMap((c) => c.evals.map((e) => jobOf(e))));
  const evals = allEvals.filter((e) => jobs.has(jobOf(e)));
  if (evals.length > 0) {
    const data: EvaluationsUpserted = { Evals: evals };
    out.push({ type: "EvaluationsUpserted", v: 1, data });
  }
  return out;
}

const jobOf = (e: EvaluationSpec) => `${e.Namespace}\u0000${e.JobID}`;

/** Nomad keeps one evaluation per (namespace, job) per batch: the first. */
function dedupePerJob(evals: readonly EvaluationSpec[]): EvaluationSpec[] {
  const seen = new Set<string>();
  return evals.filter((e) => {
    const key = jobOf(e);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
