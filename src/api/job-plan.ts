import { randomUUID } from "node:crypto";
import { jobKey } from "../../projections/evals.ts";
import type { JobRow } from "../../projections/jobs.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import type { JobSpec } from "../../streams/jobs.ts";
import { annotateJobDiff } from "../jobs/annotate-diff.ts";
import { diffJobs, type JobDiff } from "../jobs/job-diff.ts";
import { nextPeriodicLaunch } from "../jobs/periodic-launch.ts";
import { specChanged } from "../jobs/spec-changed.ts";
import { BLOCKED_EVAL_FAILED_PLACEMENTS } from "../services/scheduler/descriptions.ts";
import { scheduleGeneric } from "../services/scheduler/generic-scheduler.ts";
import { ReadyNodes } from "../services/scheduler/ready-nodes.ts";
import type { DesiredUpdates } from "../services/scheduler/reconciler.ts";
import type { ScheduleOutcome } from "../services/scheduler/scheduler-context.ts";
import { scheduleSystem } from "../services/scheduler/system-scheduler.ts";
import type { ApiContext } from "./context.ts";
import { allocStub } from "./node-views.ts";

/**
 * Nomad's Job.Plan: what the scheduler would do if `job` were registered
 * now, computed against the current tables with the job in place of the
 * stored one. A dry run: nothing is appended.
 */
export function planJob(ctx: ApiContext, job: JobSpec, withDiff: boolean): Record<string, unknown> {
  const { tables } = ctx;
  const existing = tables.jobs.get(jobKey(job.Namespace, job.ID));
  const changed = !existing || specChanged(existing, job);
  const now = ctx.clock.now();
  const candidate: JobRow =
    existing && !changed
      ? existing
      : {
          ...job,
          NodePool: job.NodePool || "default",
          Status: existing?.Status ?? "pending",
          StatusDescription: "",
          Stable: false,
          Version: existing ? existing.Version + 1 : 0,
          SubmitTime: now * 1e6,
          CreateIndex: existing?.CreateIndex ?? ctx.store.appliedIndex + 1,
          ModifyIndex: ctx.store.appliedIndex + 1,
          JobModifyIndex: ctx.store.appliedIndex + 1,
        };
  const evaluation = newEvaluation({
    ID: randomUUID(),
    Namespace: job.Namespace,
    Priority: job.Priority,
    Type: job.Type,
    TriggeredBy: "job-register",
    JobID: job.ID,
    // Nomad's plan evaluation carries the index the job would be written at (0 when unchanged).
    JobModifyIndex: existing && changed ? existing.JobModifyIndex + 1 : 0,
    AnnotatePlan: true,
    CreateTime: now * 1e6,
  });
  const schedulerCtx = { tables, readyNodes: new ReadyNodes(tables.nodes), nowMs: now, newID: randomUUID };
  const outcome =
    job.Type === "system" || job.Type === "sysbatch"
      ? scheduleSystem(schedulerCtx, evaluation, { attempt: 0, job: candidate })
      : scheduleGeneric(schedulerCtx, evaluation, { attempt: 0, job: candidate });
  const updates = withPreemptions(
    job.Type === "system" || job.Type === "sysbatch"
      ? systemUpdates(outcome, candidate)
      : outcome.desiredTGUpdates,
    outcome,
  );
  const failed: Record<string, unknown> | null = outcome.failedTGAllocs
    ? Object.fromEntries(Object.entries(outcome.failedTGAllocs).map(([tg, m]) => [tg, m.toJSON()]))
    : null;
  let diff: JobDiff | null = null;
  if (withDiff) {
    // Nomad diffs the stored job with the submitted one, in context, then
    // writes the plan's counts onto it for `nomad job plan` to print.
    diff = diffJobs(existing ?? null, job, true);
    annotateJobDiff(diff, updates);
  }
  return {
    Annotations: { DesiredTGUpdates: updates, PreemptedAllocs: preemptedAllocs(outcome) },
    FailedTGAllocs: failed,
    JobModifyIndex: existing?.JobModifyIndex ?? 0,
    CreatedEvals: createdEvals(evaluation, outcome, now * 1e6, ctx.store.appliedIndex),
    Diff: diff,
    NextPeriodicLaunch: nextPeriodicLaunch(job.Periodic, now),
    Warnings: "",
    Index: Math.max(1, ctx.store.appliedIndex),
  };
}

/** Nomad's Annotations.PreemptedAllocs: the stubs of the allocations the plan would evict, null for none. */
function preemptedAllocs(outcome: ScheduleOutcome): Record<string, unknown>[] | null {
  const { preemptions } = outcome.plan;
  if (preemptions.size === 0) return null;
  return [...preemptions.values()].map(({ alloc }) =>
    allocStub(alloc, { resources: false, taskStates: true }),
  );
}

/** Each group's Preemptions: how many allocations its placements would evict (Nomad counts them as it annotates). */
function withPreemptions(
  updates: Readonly<Record<string, DesiredUpdates>>,
  outcome: ScheduleOutcome,
): Record<string, DesiredUpdates> {
  const { preemptions, placements } = outcome.plan;
  if (preemptions.size === 0) return { ...updates };
  const groupOf = new Map(placements.map((p) => [p.ID, p.TaskGroup]));
  const out: Record<string, DesiredUpdates> = {};
  for (const [tg, u] of Object.entries(updates)) out[tg] = { ...u };
  for (const { by } of preemptions.values()) {
    const u = out[groupOf.get(by) ?? ""];
    if (u) u.Preemptions++;
  }
  return out;
}

/** The system scheduler has no reconciler annotations: they are read off its plan. */
function systemUpdates(outcome: ScheduleOutcome, job: JobRow): Record<string, DesiredUpdates> {
  const out: Record<string, DesiredUpdates> = {};
  const of = (tg: string) =>
    (out[tg] ??= {
      Ignore: 0,
      Place: 0,
      Migrate: 0,
      Stop: 0,
      InPlaceUpdate: 0,
      DestructiveUpdate: 0,
      Canary: 0,
      Preemptions: 0,
    });
  for (const tg of job.TaskGroups) of(tg.Name);
  for (const p of outcome.plan.placements) of(p.TaskGroup).Place++;
  return out;
}

/**
 * The evaluations the scheduler would create (Nomad's Harness collects
 * them): the blocked evaluation that waits for room when placements fail,
 * or, when failed reschedules are to wait instead, the delayed follow-ups.
 */
function createdEvals(
  evaluation: EvaluationSpec,
  outcome: ScheduleOutcome,
  nowNs: number,
  snapshotIndex: number,
): Record<string, unknown>[] | null {
  const created: EvaluationSpec[] = [];
  if (outcome.failedTGAllocs && !outcome.delayInstead) {
    created.push(
      newEvaluation({
        ID: randomUUID(),
        Namespace: evaluation.Namespace,
        Priority: evaluation.Priority,
        Type: evaluation.Type,
        TriggeredBy: "queued-allocs",
        JobID: evaluation.JobID,
        JobModifyIndex: evaluation.JobModifyIndex,
        Status: "blocked",
        StatusDescription: BLOCKED_EVAL_FAILED_PLACEMENTS,
        PreviousEval: evaluation.ID,
        FailedTGAllocs: Object.fromEntries(
          Object.entries(outcome.failedTGAllocs).map(([tg, m]) => [tg, m.toJSON()]),
        ),
        ClassEligibility: outcome.escaped ? null : Object.fromEntries(outcome.classEligibility),
        EscapedComputedClass: outcome.escaped,
        SnapshotIndex: snapshotIndex,
        CreateTime: nowNs,
      }),
    );
  }
  if (outcome.delayInstead) created.push(...outcome.followupEvals);
  if (created.length === 0) return null;
  // Never written: no index of their own, as in Nomad's answer.
  return created.map((e) => ({ ...e, RelatedEvals: null, LeaderACL: "", CreateIndex: 0, ModifyIndex: 0 }));
}
