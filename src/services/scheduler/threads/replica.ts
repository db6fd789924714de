import { randomUUID } from "node:crypto";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Logger } from "pino";
import { filter } from "rxjs";
import type { EvaluationRow } from "../../../../projections/evals.ts";
import { createProjections } from "../../../../projections/index.ts";
import type { NodeRow } from "../../../../projections/nodes.ts";
import { allSchemas } from "../../../../streams/index.ts";
import { EnvelopeCodec } from "../../../codec/envelope-codec.ts";
import type { LogRecord } from "../../../log/event-log.ts";
import { Store } from "../../../store/store.ts";
import { ReadyNodes, readinessChanged } from "../ready-nodes.ts";
import { schedulePass } from "../schedule-pass.ts";
import type { SchedulerContext } from "../scheduler-context.ts";
import { ForwardedLog, type ForwardedLogPort } from "./forwarded-log.ts";
import type { ReplicaStats, ScheduleRequest, StartupFigures, ThreadData } from "./messages.ts";
import { outcomeMessage } from "./plan-message.ts";
import { replicaProjections, tablesOf } from "./replica-projections.ts";
import { ReplicaSnapshotFile } from "./replica-snapshot.ts";
import { tablesHash } from "./tables-hash.ts";

/**
 * A follower of the main store inside a scheduler thread: the projections
 * the scheduler depends on, applied by a Store of their own to the records
 * the main thread applied, in the same order; and the scheduler, run against
 * them at one index. Nothing here touches worker_threads: replica-thread.ts
 * wires it to its port, tests may run it in process.
 */
export class Replica {
  readonly log: ForwardedLog;
  private readonly store: Store;
  private readonly tables: ReturnType<typeof createProjections>["tables"];
  private readonly names: readonly string[];
  private readonly readyNodes: ReadyNodes;
  private startup: StartupFigures = { snapshotIndex: 0, snapshotMs: 0, replayMs: 0, replayed: 0 };
  /** When the store asked for its first record: the snapshot's part was done. */
  private followed: { from: number; at: number } | undefined;

  /** `onFatal`: the replica cannot apply a record and will never move again. */
  constructor(
    data: ThreadData,
    port: ForwardedLogPort,
    private readonly logger: Logger,
    onFatal: (err: Error) => void,
    private readonly newID: () => string = randomUUID,
  ) {
    const projections = createProjections();
    const kept = replicaProjections(projections.all, data.tables);
    this.names = tablesOf(kept);
    this.tables = projections.tables;
    this.log = new ForwardedLog(data.startIndex, {
      follow: (from) => {
        this.followed = { from, at: performance.now() };
        port.follow(from);
      },
      more: () => port.more(),
    });
    this.store = new Store({
      log: this.log,
      codec: new EnvelopeCodec(allSchemas),
      projections: kept,
      logger,
      snapshots: data.snapshotDir
        ? new ReplicaSnapshotFile(data.snapshotDir, logger, new Set(this.names))
        : undefined,
    });
    this.readyNodes = new ReadyNodes(this.tables.nodes);
    // Which nodes are ready changes rarely; client updates touch node rows all the time.
    this.store.change$.pipe(filter((c) => c.table === "nodes")).subscribe({
      next: (c) => {
        if (readinessChanged(c.before as NodeRow | undefined, c.after as NodeRow | undefined))
          this.readyNodes.invalidate();
      },
      error: () => undefined,
    });
    this.store.applied$.subscribe({ error: (err: Error) => onFatal(err) });
  }

  get appliedIndex(): number {
    return this.store.appliedIndex;
  }

  /** Loads the newest snapshot at or before the start index and applies the records after it, up to that index. */
  async start(): Promise<StartupFigures> {
    const t0 = performance.now();
    await this.store.start();
    const end = performance.now();
    // The store asks for records (read or tail) right after its snapshot's part.
    const followed = this.followed ?? { from: this.store.appliedIndex + 1, at: end };
    const snapshotIndex = followed.from - 1;
    this.startup = {
      snapshotIndex,
      snapshotMs: followed.at - t0,
      replayMs: end - followed.at,
      replayed: this.store.appliedIndex - snapshotIndex,
    };
    return this.startup;
  }

  receive(records: readonly LogRecord[], live: boolean): void {
    this.log.receive(records, live);
  }

  /**
   * Runs the scheduler for one evaluation once the replica has applied
   * `minIndex`, holding the log so every table is read at one index, and
   * answers with the plan as a message (and the buffer to transfer).
   */
  async schedule(request: ScheduleRequest) {
    const t0 = performance.now();
    if (this.store.appliedIndex < request.minIndex) await this.store.waitFor(request.minIndex);
    const t1 = performance.now();
    this.log.hold();
    try {
      const atIndex = this.store.appliedIndex;
      const ctx: SchedulerContext = {
        tables: this.tables,
        readyNodes: this.readyNodes,
        nowMs: request.nowMs,
        newID: this.newID,
      };
      const evaluation: EvaluationRow = request.evaluation;
      const outcome = schedulePass(ctx, evaluation, { attempt: request.attempt });
      const t2 = performance.now();
      const result = outcomeMessage(outcome, evaluation, atIndex, this.newID, request.signingKeyID, {
        waitMs: t1 - t0,
        computeMs: t2 - t1,
      });
      // The hold makes this true even for a computation that yields; checked, as it is the whole point.
      if (this.store.appliedIndex !== atIndex)
        throw new Error(`replica moved from ${atIndex} to ${this.store.appliedIndex} during a computation`);
      return result;
    } finally {
      this.log.release();
    }
  }

  /** The state hash of the replica's tables, once it has applied `minIndex`. */
  async hash(minIndex: number): Promise<{ index: number; hash: string }> {
    if (this.store.appliedIndex < minIndex) await this.store.waitFor(minIndex);
    return { index: this.store.appliedIndex, hash: tablesHash(this.names, (n) => this.store.table(n)) };
  }

  stats(gc = false): ReplicaStats {
    if (gc) collectGarbage();
    const rows: Record<string, number> = {};
    for (const n of this.names) rows[n] = this.store.table(n).size;
    return {
      appliedIndex: this.store.appliedIndex,
      heapUsed: getHeapStatistics().used_heap_size,
      rows,
      startup: this.startup,
      applying: { ...this.log.applying },
    };
  }

  /** The tables the replica holds (and its state hash covers). */
  get tableNames(): readonly string[] {
    return this.names;
  }

  async stop(): Promise<void> {
    await this.store.stop();
    this.logger.debug("replica stopped");
  }
}

let gcFunction: (() => void) | undefined;

/** A full collection without --expose-gc on the command line: V8 exposes gc() to contexts made after the flag is set. */
function collectGarbage(): void {
  if (!gcFunction) {
    setFlagsFromString("--expose-gc");
    gcFunction = runInNewContext("gc") as () => void;
  }
  gcFunction();
}
