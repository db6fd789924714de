import { randomUUID } from "node:crypto";
import { jobKey } from "../../projections/evals.ts";
import type { JobRow } from "../../projections/jobs.ts";
import { newEvaluation, ZERO_TIME } from "../../streams/evals.ts";
import type { JobSpec } from "../../streams/jobs.ts";
import { scheduleGeneric } from "../services/scheduler/generic-scheduler.ts";
import { ReadyNodes } from "../services/scheduler/ready-nodes.ts";
import type { DesiredUpdates } from "../services/scheduler/reconciler.ts";
import type { ScheduleOutcome } from "../services/scheduler/scheduler-context.ts";
import { scheduleSystem } from "../services/scheduler/system-scheduler.ts";
import type { ApiContext } from "./context.ts";
import { specChanged } from "./job-views.ts";

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
    AnnotatePlan: true,
    CreateTime: now * 1e6,
  });
  const schedulerCtx = { tables, readyNodes: new ReadyNodes(tables.nodes), nowMs: now, newID: randomUUID };
  const outcome =
    job.Type === "system" || job.Type === "sysbatch"
      ? scheduleSystem(schedulerCtx, evaluation, { attempt: 0, job: candidate })
      : scheduleGeneric(schedulerCtx, evaluation, { attempt: 0, job: candidate });
  const updates =
    job.Type === "system" || job.Type === "sysbatch"
      ? systemUpdates(outcome, candidate)
      : outcome.desiredTGUpdates;
  const failed: Record<string, unknown> | null = outcome.failedTGAllocs
    ? Object.fromEntries(Object.entries(outcome.failedTGAllocs).map(([tg, m]) => [tg, m.toJSON()]))
    : null;
  return {
    Annotations: { DesiredTGUpdates: updates, PreemptedAllocs: null },
    FailedTGAllocs: failed,
    JobModifyIndex: existing?.JobModifyIndex ?? 0,
    CreatedEvals: null,
    Diff: withDiff ? jobDiff(existing, candidate, changed, updates) : null,
    NextPeriodicLaunch: ZERO_TIME,
    Warnings: "",
    Index: Math.max(1, ctx.store.appliedIndex),
  };
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

/** A summary of Nomad's JobDiff: whether the job is new, edited or unchanged, and per group what would happen. */
function jobDiff(
  existing: JobRow | undefined,
  job: JobRow,
  changed: boolean,
  updates: Readonly<Record<string, DesiredUpdates>>,
): Record<string, unknown> {
  return {
    Type: !existing ? "Added" : changed ? "Edited" : "None",
    ID: job.ID,
    Fields: null,
    Objects: null,
    TaskGroups: job.TaskGroups.map((tg) => {
      const u = updates[tg.Name];
      const counts: Record<string, number> = {};
      if (u) {
        if (u.Place) counts.create = u.Place;
        if (u.Stop) counts.destroy = u.Stop;
        if (u.InPlaceUpdate) counts["in-place update"] = u.InPlaceUpdate;
        if (u.DestructiveUpdate) counts["create/destroy update"] = u.DestructiveUpdate;
        if (u.Migrate) counts.migrate = u.Migrate;
        if (u.Ignore) counts.ignore = u.Ignore;
      }
      const before = existing?.TaskGroups.find((g) => g.Name === tg.Name);
      return {
        Type: !before ? "Added" : changed ? "Edited" : "None",
        Name: tg.Name,
        Fields: null,
        Objects: null,
        Tasks: null,
        Updates: Object.keys(counts).length > 0 ? counts : null,
      };
    }),
  };
}
