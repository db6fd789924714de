import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { EvaluationRow } from "../../../projections/evals.ts";
import type { Projections } from "../../../projections/index.ts";
import type { EvalStatus, EvaluationSpec, EvaluationsUpserted } from "../../../streams/evals.ts";
import type { PlanIdentities } from "../../identity/plan-identities.ts";
import type { Writable, Written } from "../../store/writer.ts";
import type { Clock } from "../../util/clock.ts";
import type { BlockedEvals } from "./blocked-evals.ts";
import { type ComputedPass, type InProcessPass, inProcessPass } from "./computed-pass.ts";
import {
  GENERIC_TRIGGERS,
  MAX_ATTEMPTS_REACHED,
  MAX_BATCH_ATTEMPTS,
  MAX_SERVICE_ATTEMPTS,
} from "./descriptions.ts";
import type { Delivery, EvalBroker } from "./eval-broker.ts";
import { blockedEvalSpec, evalStatusUpdate, queuedAfter } from "./eval-update.ts";
import {
  invokeTiming,
  NO_LABELS,
  NO_METRICS,
  NODE_REJECTED,
  PIPELINE_TIMINGS,
  type SchedulerMetricsSink,
} from "./pipeline-metrics.ts";
import type { PlanResult } from "./plan-applier.ts";
import type { ReadyNodes } from "./ready-nodes.ts";
import { schedulePass, schedulePassSliced } from "./schedule-pass.ts";
import { jobUnknown, type SchedulerContext } from "./scheduler-context.ts";
import type { Utilization } from "./utilization.ts";
import { SCHEDULER_TYPES, type WorkerInfo } from "./worker-pool.ts";

/**
 * Computes one pass of the scheduler for an evaluation against a view of
 * the tables that is not torn (every table at one index). In process by
 * default (`computeInProcess`); elsewhere (a worker thread's replica) as
 * long as the plan it returns names that index.
 */
export type SchedulePass = (
  evaluation: EvaluationRow,
  attempt: number,
) => ComputedPass | Promise<ComputedPass>;

/** What the workers share: the leader's broker, blocked tracker, ready nodes and write path. */
export interface WorkerRuntime {
  readonly tables: Projections["tables"];
  readonly broker: EvalBroker;
  readonly blocked: BlockedEvals;
  readonly readyNodes: ReadyNodes;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly newID: () => string;
  readonly appliedIndex: () => number;
  /**
   * Appends records and waits until they are applied: the plan queue, which
   * batches the records of every evaluation in flight into one append.
   */
  write(records: readonly Writable[]): Promise<Written>;
  /** How many evaluations were processed, and plans submitted (for tests and benchmarks). */
  readonly counters: { evals: number; plans: number };
  /** Signs the workload identities of what plans place; without it, allocations get none. */
  readonly identities?: PlanIdentities;
  /** Where passes are computed; in process, against `tables`, when absent. */
  readonly schedule?: SchedulePass;
  /**
   * True while `schedule` computes on another thread: a pass then costs this
   * loop only a message, so a worker with room takes its next evaluation in
   * the same turn, and the turn's requests go out together (one wake-up of
   * the thread, see SchedulerThreads.schedule).
   */
  readonly offThread?: () => boolean;
  /**
   * Evaluations one worker keeps in flight: it takes the next one while the
   * records of the previous ones are on their way to the log.
   */
  readonly depth?: number;
  readonly metrics?: SchedulerMetricsSink;
  /** Time workers spend with an evaluation in hand (`/v1/metrics`). */
  readonly utilization?: Utilization;
}

/** Who a worker is and what it takes, as `/v1/agent/schedulers` shows it. */
export interface WorkerIdentity {
  readonly id: string;
  /** The evaluation types it dequeues. */
  readonly types: readonly string[];
  /** The types the pool enabled, `_core` included (it reports them as Nomad does). */
  readonly enabled?: readonly string[];
  readonly startedAt: number;
}

/**
 * Nomad's worker: takes an evaluation from the broker, runs the scheduler
 * for it, submits the plan, retries against fresher tables while the plan
 * does not fully apply (Nomad's RefreshIndex, up to its attempt limits),
 * records the evaluation's outcome, and acks once that is durable and
 * applied. Any failure nacks the delivery: the broker brings it back later.
 *
 * A worker keeps up to `depth` evaluations planning at once: once one's
 * pass is computed and its records are queued for the log, it takes the
 * next (the broker never hands out two of one job at once). An evaluation
 * whose plans are all applied and that only records its outcome no longer
 * counts against `depth` (a status record cannot make another plan
 * conflict), so up to FINISHING_PER_SLOT times as many wait on that last
 * write and their acks. The plan queue puts the records of all of them in
 * one append, so the pipeline pays one durable write per batch, not one per
 * step per evaluation. Past that, evaluations wait in the broker, where
 * `/v1/metrics` shows them.
 */
export class Worker {
  private running = true;
  private readonly retired = new AbortController();
  private status = "Starting";
  private dequeuing = false;
  private computing = 0;
  private readonly inHand = new Set<Promise<void>>();
  /** Evaluations in hand that may still submit a plan: what `depth` bounds. */
  private planning = 0;
  /** Wakes the loop when an evaluation stops planning (it may take another then). */
  private slotFreed: (() => void) | undefined;
  private readonly depth: number;
  private readonly metrics: SchedulerMetricsSink;

  constructor(
    private readonly rt: WorkerRuntime,
    private readonly identity: WorkerIdentity = {
      id: randomUUID(),
      types: SCHEDULER_TYPES,
      startedAt: rt.clock.now(),
    },
  ) {
    this.depth = Math.max(1, Math.floor(rt.depth ?? 1));
    this.metrics = rt.metrics ?? NO_METRICS;
  }

  /** Finishes the evaluations in hand, if any, and takes no other. */
  stop(): void {
    this.running = false;
    if (this.status !== "Stopped") this.status = "Stopping";
    this.retired.abort();
  }

  /** Nomad's WorkerInfo for `/v1/agent/schedulers`. */
  info(): WorkerInfo {
    return {
      ID: this.identity.id,
      EnabledSchedulers: this.identity.enabled ?? this.identity.types,
      Started: this.identity.startedAt,
      Status: this.status,
      WorkloadStatus: this.workload(),
    };
  }

  /** Nomad's SchedulerWorkerStatus names; waiting on the log is its WaitingForRaft. */
  private workload(): string {
    if (this.status === "Stopped") return "Stopped";
    if (this.computing > 0) return "Scheduling";
    if (this.inHand.size > 0 && !this.dequeuing) return "WaitingForRaft";
    return "WaitingToDequeue";
  }

  async run(): Promise<void> {
    if (this.running) this.status = "Started";
    try {
      await this.loop();
    } finally {
      await Promise.allSettled([...this.inHand]);
      this.rt.utilization?.end(this);
      this.status = "Stopped";
    }
  }

  private async loop(): Promise<void> {
    while (this.running) {
      if (this.planning >= this.depth || this.inHand.size >= this.depth * FINISHING_PER_SLOT) {
        // Woken by release() or by an evaluation leaving its hands: a race
        // over every evaluation in hand added a reaction to each, per wait.
        await new Promise<void>((r) => (this.slotFreed = r));
        this.slotFreed = undefined;
        continue;
      }
      this.dequeuing = true;
      const waitStarted = performance.now();
      const d = await this.rt.broker.dequeue(this.identity.types, this.retired.signal);
      this.dequeuing = false;
      if (!d) return;
      this.metrics.sample(
        PIPELINE_TIMINGS.dequeue[0],
        performance.now() - waitStarted,
        NO_LABELS,
        PIPELINE_TIMINGS.dequeue[1],
      );
      this.rt.utilization?.begin(this);
      this.planning++;
      const slot = { held: true };
      const task = this.handle(d, () => this.release(slot)).finally(() => {
        this.release(slot);
        this.inHand.delete(task);
        this.slotFreed?.();
        if (this.inHand.size === 0) this.rt.utilization?.end(this);
      });
      this.inHand.add(task);
      // With room for more, the next dequeue starts once this one has
      // reached the log (its pass computed); a later turn is soon enough,
      // unless passes are computed elsewhere.
      if (this.planning < this.depth)
        await Promise.race([task, this.rt.offThread?.() ? Promise.resolve() : yieldTurn()]);
    }
  }

  /** An evaluation's planning slot is given back once, when it stops planning or leaves. */
  private release(slot: { held: boolean }): void {
    if (!slot.held) return;
    slot.held = false;
    this.planning--;
    this.slotFreed?.();
  }

  private async handle(d: Delivery, donePlanning: () => void): Promise<void> {
    const started = performance.now();
    try {
      await this.process(d, donePlanning);
      if (this.rt.broker.isOutstanding(d.evaluation.ID, d.token))
        this.rt.broker.ack(d.evaluation.ID, d.token);
    } catch (err) {
      this.rt.logger.error({ err, eval: d.evaluation.ID }, "scheduling an evaluation failed");
      if (this.rt.broker.isOutstanding(d.evaluation.ID, d.token))
        this.rt.broker.nack(d.evaluation.ID, d.token);
    }
    this.metrics.sample(
      PIPELINE_TIMINGS.evaluation[0],
      performance.now() - started,
      NO_LABELS,
      PIPELINE_TIMINGS.evaluation[1],
    );
  }

  private async process(d: Delivery, donePlanning: () => void): Promise<void> {
    const { tables } = this.rt;
    const row = tables.evals.get(d.evaluation.ID);
    // Deleted, or decided elsewhere since it was queued.
    if (!row || (row.Status !== "pending" && row.Status !== "blocked")) return;
    this.rt.counters.evals++;
    // An unblocked evaluation carries the class eligibility its last run recorded in memory.
    const evaluation: EvaluationRow =
      row.Status === "blocked" ? { ...row, ...pickBlockState(d.evaluation) } : row;
    const generic = evaluation.Type === "service" || evaluation.Type === "batch";
    const system = evaluation.Type === "system" || evaluation.Type === "sysbatch";
    if (!generic && !system) {
      await this.setStatus(
        d,
        evaluation,
        "failed",
        `scheduler type "${evaluation.Type}" is not supported`,
        donePlanning,
      );
      return;
    }
    if (generic && !GENERIC_TRIGGERS.has(evaluation.TriggeredBy)) {
      await this.setStatus(
        d,
        evaluation,
        "failed",
        `scheduler cannot handle '${evaluation.TriggeredBy}' evaluation reason`,
        donePlanning,
      );
      return;
    }
    if (jobUnknown(tables, evaluation.Namespace, evaluation.JobID)) {
      // No row and no version: nothing to reconcile against, and nothing of
      // the scheduler's to stop. Left as written (Nomad would treat the job as
      // purged; here that case always has a version on record).
      this.rt.logger.debug(
        { eval: evaluation.ID, job: evaluation.JobID },
        "evaluation of a job this cluster never recorded",
      );
      return;
    }
    const max = evaluation.Type === "batch" ? MAX_BATCH_ATTEMPTS : MAX_SERVICE_ATTEMPTS;
    let attempts = 0;
    let attempt = 0;
    let pass: ComputedPass;
    let placed: Readonly<Record<string, number>> = {};
    for (;;) {
      // Every pass after the first reads tables at or past the index the
      // previous plan applied at (its write waited for that): Nomad's
      // re-plan at the plan result's RefreshIndex.
      pass = await this.compute(evaluation, attempt);
      attempt++;
      placed = {};
      if (pass.noOp) break;
      this.rt.counters.plans++;
      const result = await this.submit(d, pass);
      placed = result.placedByGroup;
      if (result.fullCommit) break;
      attempts = result.progress ? 0 : attempts + 1;
      if (attempts >= max) {
        this.rt.logger.warn(
          { eval: evaluation.ID, attempts: max },
          "plan kept conflicting; evaluation blocked",
        );
        const blocked = this.blockedEval(evaluation, pass, true);
        await this.setStatus(d, evaluation, "failed", MAX_ATTEMPTS_REACHED(max), donePlanning, pass, blocked);
        return;
      }
    }

    // Nomad's adjustQueuedAllocations: what the last plan placed is no longer queued.
    const queued = queuedAfter(pass.queuedAllocs, placed);
    const passQueued: ComputedPass = { ...pass, queuedAllocs: queued };
    const failed = pass.failedTGAllocs !== null;
    if (failed && evaluation.Status === "blocked") {
      // Nomad's ReblockEval: still stuck; back to the tracker with what this run learned, nothing written.
      this.rt.blocked.block({
        ...evaluation,
        ClassEligibility: pass.escaped ? null : Object.fromEntries(pass.classEligibility),
        EscapedComputedClass: pass.escaped,
        SnapshotIndex: pass.snapshotIndex,
      });
      return;
    }
    const blocked = failed && !pass.delayInstead ? this.blockedEval(evaluation, pass, false) : undefined;
    await this.setStatus(d, evaluation, "complete", "", donePlanning, passQueued, blocked);
  }

  /** One pass of the scheduler, timed under Nomad's invoke_scheduler.<type>. */
  private async compute(evaluation: EvaluationRow, attempt: number): Promise<ComputedPass> {
    const started = performance.now();
    this.computing++;
    try {
      return await (this.rt.schedule ?? ((e, a) => computeInProcess(this.rt, e, a)))(evaluation, attempt);
    } finally {
      this.computing--;
      this.metrics.sample(
        invokeTiming(evaluation.Type),
        performance.now() - started,
        NO_LABELS,
        PIPELINE_TIMINGS.invoke[1],
      );
    }
  }

  private async submit(d: Delivery, pass: ComputedPass): Promise<PlanResult> {
    const started = performance.now();
    const result = await this.whileWaiting(d, () =>
      pass.submit({
        write: (records) => this.rt.write(records),
        tables: this.rt.tables,
        newID: this.rt.newID,
        identities: this.rt.identities,
      }),
    );
    this.metrics.sample(
      PIPELINE_TIMINGS.submit[0],
      performance.now() - started,
      NO_LABELS,
      PIPELINE_TIMINGS.submit[1],
    );
    for (const nodeID of result.refusedNodes)
      this.metrics.incr(NODE_REJECTED[0], 1, { node_id: nodeID }, NODE_REJECTED[1]);
    return result;
  }

  /**
   * Nomad's CreateBlockedEval. A pass computed on a scheduler thread drew
   * the ID of the one it spawns when placements fail (and encoded it).
   */
  private blockedEval(evaluation: EvaluationRow, pass: ComputedPass, planFailure: boolean): EvaluationSpec {
    const id = (!planFailure && pass.blockedID) || this.rt.newID();
    return blockedEvalSpec(evaluation, pass, id, planFailure, this.rt.clock.now() * 1e6);
  }

  /**
   * Nomad's CreateBlockedEval then setStatus: the blocked evaluation it
   * spawned, then the evaluation's outcome, as two records (Nomad applies
   * them separately too, so event-stream subscribers see one evaluation per
   * frame, as Nomad's clients expect).
   */
  private async setStatus(
    d: Delivery,
    evaluation: EvaluationRow,
    status: EvalStatus,
    description: string,
    /** Called once the records are queued: from here on the evaluation submits no plan. */
    donePlanning: () => void,
    pass?: ComputedPass,
    blocked?: EvaluationSpec,
  ): Promise<void> {
    const started = performance.now();
    const now = this.rt.clock.now() * 1e6;
    const updated = evalStatusUpdate(
      evaluation,
      status,
      description,
      pass,
      blocked?.ID,
      pass ? 0 : this.rt.appliedIndex(),
      Math.max(now, evaluation.CreateTime + 1),
    );
    // A pass computed on a scheduler thread brings these records encoded
    // already, for the outcome it expected: used when that is this one.
    const encoded = pass?.encodedOutcome?.(updated, blocked);
    const records: Writable[] =
      encoded ??
      (blocked ? [{ Evals: [blocked] }, { Evals: [updated] }] : [{ Evals: [updated] }]).map(
        (data: EvaluationsUpserted) => ({ type: "EvaluationsUpserted", v: 1, data }),
      );
    const written = await this.whileWaiting(d, () => {
      const writing = this.rt.write(records);
      donePlanning();
      return writing;
    });
    this.metrics.sample(
      PIPELINE_TIMINGS.update[0],
      performance.now() - started,
      NO_LABELS,
      PIPELINE_TIMINGS.update[1],
    );
    const refused = written.outcomes.find((o) => o.status === "rejected");
    if (refused?.status === "rejected") {
      throw new Error(`evaluation ${evaluation.ID} update refused: ${refused.reason}`);
    }
  }

  /** Runs a log write with the delivery's nack timer paused: waiting on the log is not being stuck. */
  private async whileWaiting<T>(d: Delivery, run: () => Promise<T>): Promise<T> {
    this.rt.broker.pauseNack(d.evaluation.ID, d.token);
    try {
      return await run();
    } finally {
      this.rt.broker.resumeNack(d.evaluation.ID, d.token);
    }
  }
}

/**
 * One pass in process, against the leader's tables, at once: read
 * synchronously, so they cannot change under it.
 */
export function computeInProcess(
  rt: Pick<WorkerRuntime, "tables" | "readyNodes" | "clock" | "newID" | "appliedIndex">,
  evaluation: EvaluationRow,
  attempt: number,
): InProcessPass {
  const snapshotIndex = rt.appliedIndex();
  return inProcessPass(schedulePass(contextOf(rt), evaluation, { attempt }), snapshotIndex);
}

/**
 * One pass in process in slices of a few milliseconds, the event loop
 * served between them (heartbeats wait at most a slice). The tables may move
 * between slices: the plan carries the index it started at, the lowest its
 * reads saw, and the apply checks every node again.
 */
export async function computeInSlices(
  rt: Pick<WorkerRuntime, "tables" | "readyNodes" | "clock" | "newID" | "appliedIndex">,
  evaluation: EvaluationRow,
  attempt: number,
): Promise<InProcessPass> {
  const snapshotIndex = rt.appliedIndex();
  return inProcessPass(await schedulePassSliced(contextOf(rt), evaluation, { attempt }), snapshotIndex);
}

function contextOf(rt: Pick<WorkerRuntime, "tables" | "readyNodes" | "clock" | "newID">): SchedulerContext {
  return { tables: rt.tables, readyNodes: rt.readyNodes, nowMs: rt.clock.now(), newID: rt.newID };
}

/**
 * Evaluations that only record their outcome, per planning slot: they wait
 * on one batched append, hold a delivery and a few rows each, and acking
 * them sooner is what lets the broker hand out the next evaluations.
 */
export const FINISHING_PER_SLOT = 8;

/** Resolves on a later turn of the event loop. */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function pickBlockState(
  e: EvaluationRow,
): Pick<EvaluationRow, "ClassEligibility" | "EscapedComputedClass" | "SnapshotIndex"> {
  return {
    ClassEligibility: e.ClassEligibility,
    EscapedComputedClass: e.EscapedComputedClass,
    SnapshotIndex: e.SnapshotIndex,
  };
}
