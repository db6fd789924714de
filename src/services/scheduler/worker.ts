import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { EvaluationRow } from "../../../projections/evals.ts";
import type { Projections } from "../../../projections/index.ts";
import type { EvalStatus, EvaluationSpec, EvaluationsUpserted } from "../../../streams/evals.ts";
import type { PlanIdentities } from "../../identity/plan-identities.ts";
import type { Draft, Written } from "../../store/writer.ts";
import type { Clock } from "../../util/clock.ts";
import type { BlockedEvals } from "./blocked-evals.ts";
import {
  BLOCKED_EVAL_FAILED_PLACEMENTS,
  BLOCKED_EVAL_MAX_PLAN_DESC,
  GENERIC_TRIGGERS,
  MAX_ATTEMPTS_REACHED,
  MAX_BATCH_ATTEMPTS,
  MAX_SERVICE_ATTEMPTS,
} from "./descriptions.ts";
import type { Delivery, EvalBroker } from "./eval-broker.ts";
import { scheduleGeneric } from "./generic-scheduler.ts";
import type { AllocMetric } from "./metrics.ts";
import { submitPlan } from "./plan-applier.ts";
import type { ReadyNodes } from "./ready-nodes.ts";
import { jobUnknown, type ScheduleOutcome, type SchedulerContext } from "./scheduler-context.ts";
import { scheduleSystem } from "./system-scheduler.ts";
import { SCHEDULER_TYPES, type WorkerInfo } from "./worker-pool.ts";

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
  write(drafts: readonly Draft[]): Promise<Written>;
  /** How many evaluations were processed, and plans submitted (for tests and benchmarks). */
  readonly counters: { evals: number; plans: number };
  /** Signs the workload identities of what plans place; without it, allocations get none. */
  readonly identities?: PlanIdentities;
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

/** An evaluation row as the spec written back (the projection stamps the rest). */
export function specOf(row: EvaluationRow): EvaluationSpec {
  const { CreateIndex: _c, ModifyIndex: _m, RelatedEvals: _r, LeaderACL: _l, ...spec } = row;
  return spec;
}

/**
 * Nomad's worker: takes an evaluation from the broker, runs the scheduler
 * for it against the current tables, submits the plan, retries while the
 * plan does not fully apply (up to Nomad's attempt limits), records the
 * evaluation's outcome, and acks. Any failure nacks the delivery: the broker
 * brings it back later.
 */
export class Worker {
  private running = true;
  private readonly retired = new AbortController();
  private status = "Starting";
  private workload = "WaitingToDequeue";

  constructor(
    private readonly rt: WorkerRuntime,
    private readonly identity: WorkerIdentity = {
      id: randomUUID(),
      types: SCHEDULER_TYPES,
      startedAt: rt.clock.now(),
    },
  ) {}

  /** Finishes the evaluation in hand, if any, and takes no other. */
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
      WorkloadStatus: this.workload,
    };
  }

  async run(): Promise<void> {
    if (this.running) this.status = "Started";
    try {
      await this.loop();
    } finally {
      this.status = "Stopped";
      this.workload = "Stopped";
    }
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.workload = "WaitingToDequeue";
      const d = await this.rt.broker.dequeue(this.identity.types, this.retired.signal);
      if (!d) return;
      this.workload = "Scheduling";
      try {
        await this.process(d);
        if (this.rt.broker.isOutstanding(d.evaluation.ID, d.token))
          this.rt.broker.ack(d.evaluation.ID, d.token);
      } catch (err) {
        this.rt.logger.error({ err, eval: d.evaluation.ID }, "scheduling an evaluation failed");
        if (this.rt.broker.isOutstanding(d.evaluation.ID, d.token))
          this.rt.broker.nack(d.evaluation.ID, d.token);
      }
    }
  }

  private async process(d: Delivery): Promise<void> {
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
      await this.setStatus(d, evaluation, "failed", `scheduler type "${evaluation.Type}" is not supported`);
      return;
    }
    if (generic && !GENERIC_TRIGGERS.has(evaluation.TriggeredBy)) {
      await this.setStatus(
        d,
        evaluation,
        "failed",
        `scheduler cannot handle '${evaluation.TriggeredBy}' evaluation reason`,
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
    let outcome: ScheduleOutcome;
    let placed: Readonly<Record<string, number>> = {};
    for (;;) {
      const ctx: SchedulerContext = {
        tables,
        readyNodes: this.rt.readyNodes,
        nowMs: this.rt.clock.now(),
        newID: this.rt.newID,
      };
      outcome = generic
        ? scheduleGeneric(ctx, evaluation, { attempt })
        : scheduleSystem(ctx, evaluation, { attempt });
      attempt++;
      placed = {};
      if (outcome.plan.isNoOp() && outcome.followupEvals.length === 0) break;
      this.rt.counters.plans++;
      const result = await this.whileWaiting(d, () =>
        submitPlan(
          (drafts) => this.rt.write(drafts),
          tables,
          outcome.plan,
          outcome.followupEvals,
          this.rt.newID,
          this.rt.identities,
        ),
      );
      placed = result.placedByGroup;
      if (result.fullCommit) break;
      attempts = result.progress ? 0 : attempts + 1;
      if (attempts >= max) {
        this.rt.logger.warn(
          { eval: evaluation.ID, attempts: max },
          "plan kept conflicting; evaluation blocked",
        );
        const blocked = this.blockedEval(evaluation, outcome, true);
        await this.setStatus(d, evaluation, "failed", MAX_ATTEMPTS_REACHED(max), outcome, blocked);
        return;
      }
    }

    const queued: Record<string, number> = {};
    // Nomad's adjustQueuedAllocations: what the last plan placed is no longer queued.
    for (const [tg, n] of Object.entries(outcome.queuedAllocs))
      queued[tg] = Math.max(0, n - (placed[tg] ?? 0));
    const outcomeQueued = { ...outcome, queuedAllocs: queued };
    const failed = outcome.failedTGAllocs !== null;
    if (failed && evaluation.Status === "blocked") {
      // Nomad's ReblockEval: still stuck; back to the tracker with what this run learned, nothing written.
      this.rt.blocked.block({
        ...evaluation,
        ClassEligibility: outcome.escaped ? null : outcome.classEligibility,
        EscapedComputedClass: outcome.escaped,
        SnapshotIndex: this.rt.appliedIndex(),
      });
      return;
    }
    const blocked =
      failed && !outcome.delayInstead ? this.blockedEval(evaluation, outcome, false) : undefined;
    await this.setStatus(d, evaluation, "complete", "", outcomeQueued, blocked);
  }

  /** Nomad's CreateBlockedEval. */
  private blockedEval(
    evaluation: EvaluationRow,
    outcome: ScheduleOutcome,
    planFailure: boolean,
  ): EvaluationSpec {
    const now = this.rt.clock.now() * 1e6;
    return {
      ...specOf(evaluation),
      ID: this.rt.newID(),
      TriggeredBy: planFailure ? "max-plan-attempts" : "queued-allocs",
      Status: "blocked",
      StatusDescription: planFailure ? BLOCKED_EVAL_MAX_PLAN_DESC : BLOCKED_EVAL_FAILED_PLACEMENTS,
      PreviousEval: evaluation.ID,
      NextEval: "",
      BlockedEval: "",
      Wait: 0,
      WaitUntil: "0001-01-01T00:00:00Z",
      FailedTGAllocs: metricsJson(outcome.failedTGAllocs),
      ClassEligibility: outcome.escaped ? null : outcome.classEligibility,
      EscapedComputedClass: outcome.escaped,
      QuotaLimitReached: "",
      QueuedAllocations: null,
      SnapshotIndex: this.rt.appliedIndex(),
      CreateTime: now,
      ModifyTime: now,
    };
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
    outcome?: ScheduleOutcome,
    blocked?: EvaluationSpec,
  ): Promise<void> {
    const now = this.rt.clock.now() * 1e6;
    const updated: EvaluationSpec = {
      ...specOf(evaluation),
      Status: status,
      StatusDescription: description,
      DeploymentID: outcome?.deploymentID ?? evaluation.DeploymentID,
      FailedTGAllocs: metricsJson(outcome?.failedTGAllocs ?? null),
      BlockedEval: blocked?.ID ?? evaluation.BlockedEval,
      QueuedAllocations: outcome ? outcome.queuedAllocs : evaluation.QueuedAllocations,
      SnapshotIndex: this.rt.appliedIndex(),
      ModifyTime: Math.max(now, evaluation.CreateTime + 1),
    };
    const records: EvaluationsUpserted[] = blocked
      ? [{ Evals: [blocked] }, { Evals: [updated] }]
      : [{ Evals: [updated] }];
    const written = await this.whileWaiting(d, () =>
      this.rt.write(records.map((data) => ({ type: "EvaluationsUpserted", v: 1, data }))),
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

function pickBlockState(
  e: EvaluationRow,
): Pick<EvaluationRow, "ClassEligibility" | "EscapedComputedClass" | "SnapshotIndex"> {
  return {
    ClassEligibility: e.ClassEligibility,
    EscapedComputedClass: e.EscapedComputedClass,
    SnapshotIndex: e.SnapshotIndex,
  };
}

function metricsJson(m: Record<string, AllocMetric> | null): Record<string, unknown> | null {
  if (!m) return null;
  const out: Record<string, unknown> = {};
  for (const [tg, metric] of Object.entries(m)) out[tg] = metric.toJSON();
  return out;
}
