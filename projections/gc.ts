import type { Projection } from "../src/store/projection.ts";
import type { Table } from "../src/store/table.ts";
import { isTerminalAlloc } from "../streams/allocs.ts";
import { isTerminalEvalStatus } from "../streams/evals.ts";
import type { GcEvent } from "../streams/gc.ts";
import type { AllocRow } from "./allocs.ts";
import { type EvaluationRow, jobKey } from "./evals.ts";
import { childChanged, isParameterized, type PeriodicLaunchRow } from "./job-children.ts";
import type { JobRow, JobSummaryRow } from "./jobs.ts";

export interface GcTables {
  readonly evals: Table<EvaluationRow>;
  readonly allocs: Table<AllocRow>;
  readonly jobs: Table<JobRow>;
  readonly summaries: Table<JobSummaryRow>;
  readonly launches?: Table<PeriodicLaunchRow>;
}

/**
 * Garbage collection of allocations, evaluations and jobs: what the
 * collector chose is removed only if it is still collectable when the record
 * applies (a rescheduled or reconnected allocation is not, a job registered
 * again is not). The tables belong to the evals, allocs and jobs projections;
 * collection is kept here, in one place, and rebuilt with them.
 */
export function gcProjection(tables: GcTables) {
  const { evals, allocs, jobs, summaries, launches } = tables;
  const projection: Projection = {
    name: "gc",
    version: 2,
    tables: [],
    reads: ["evals", "allocs", "jobs"],
    handles: new Set(["GarbageCollected"]),
    evolve(ctx, event) {
      const { data } = event as GcEvent;
      const nowNs = event.at * 1e6;
      for (const id of data.AllocIDs) {
        const a = allocs.get(id);
        if (a && allocGcEligible(a, jobs.get(jobKey(a.Namespace, a.JobID)), nowNs)) ctx.delete(allocs, id);
      }
      for (const id of data.EvalIDs) {
        const e = evals.get(id);
        if (e && isTerminalEvalStatus(e.Status) && allocs.countBy("eval", id) === 0) ctx.delete(evals, id);
      }
      // Deleting a job's evaluations and allocations left it dead (the jobs
      // projection counts a delete as Nomad's evalDelete): it goes from dead
      // to deleted, never through pending.
      for (const ref of data.Jobs) {
        const key = jobKey(ref.Namespace, ref.ID);
        const job = jobs.get(key);
        if (!job || !jobIsGcable(job)) continue;
        if (allocs.countBy("job", key) > 0 || evals.countBy("job", key) > 0) continue;
        ctx.delete(jobs, key);
        if (summaries.has(key)) ctx.delete(summaries, key);
        // As a purge: the parent's Children forget it, and its launch record goes.
        childChanged(ctx, summaries, job, undefined);
        if (launches?.has(key)) ctx.delete(launches, key);
      }
    },
  };
  return { projection };
}

/**
 * Nomad's allocGCEligible without its age check (the collector applies the
 * thresholds): the allocation is terminal and not running on its client, and
 * a failed one its job may still reschedule is kept until its replacement
 * exists, since the replacement's reschedule tracker points at it.
 */
export function allocGcEligible(
  a: Pick<AllocRow, "ClientStatus" | "DesiredStatus" | "NextAllocation" | "TaskGroup" | "RescheduleTracker">,
  job: Pick<JobRow, "Stop" | "Status" | "TaskGroups"> | undefined,
  nowNs: number,
): boolean {
  if (!isTerminalAlloc(a) || a.ClientStatus === "running") return false;
  // The job is gone, stopped or finished: nothing will reschedule it.
  if (!job || job.Stop || job.Status === "dead") return true;
  if (a.DesiredStatus === "stop" || a.ClientStatus !== "failed") return true;
  const policy = job.TaskGroups.find((tg) => tg.Name === a.TaskGroup)?.ReschedulePolicy;
  if (!policy || (!policy.Unlimited && policy.Attempts === 0)) return true;
  if (a.NextAllocation !== "") return true;
  if (policy.Unlimited) return false;
  const events = a.RescheduleTracker?.Events ?? [];
  const last = events[events.length - 1];
  if (!last) return false;
  // Kept while its last reschedule is within the policy's interval.
  return nowNs - last.RescheduleTime > policy.Interval;
}

/**
 * Nomad's jobIsGCable: periodic and parameterized jobs once stopped; others
 * once dead and either stopped or batch-like (they finish on their own).
 */
export function jobIsGcable(
  job: Pick<JobRow, "Type" | "Status" | "Stop" | "Periodic" | "ParameterizedJob" | "Dispatched">,
): boolean {
  // Nomad's client fills in Enabled = true when a periodic block leaves it out.
  const periodic = !!job.Periodic && job.Periodic.Enabled !== false;
  if (periodic || isParameterized(job)) return job.Stop;
  if (job.Status !== "dead") return false;
  return job.Stop || job.Type === "batch" || job.Type === "sysbatch";
}
