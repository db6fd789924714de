/**
 * Nomad's `isEvalDeleteSafe` (nomad/state/state_store.go): whether removing
 * an evaluation could lose work the scheduler still owes a job. Used by the
 * delete handler (first check) and again by the evals projection at apply
 * (second check), with the same lookups, so both agree.
 *
 * The shapes below are only the fields the rule reads, so the rule works
 * against whatever job and allocation tables exist.
 */

export interface JobSafetyView {
  readonly Stop: boolean;
  readonly Status: string;
  readonly TaskGroups?: readonly TaskGroupSafetyView[] | null;
}

export interface TaskGroupSafetyView {
  readonly Name: string;
  readonly ReschedulePolicy?: { readonly Attempts: number; readonly Unlimited: boolean } | null;
}

export interface AllocSafetyView {
  readonly ClientStatus: string;
  readonly TaskGroup: string;
  readonly NextAllocation: string;
  readonly RescheduleTracker?: { readonly Events?: readonly unknown[] | null } | null;
}

/** Where the rule finds an evaluation's job and allocations. */
export interface DeleteSafetyLookups {
  /** The job, or undefined when it is gone (also while no jobs table exists). */
  job(namespace: string, jobID: string): JobSafetyView | undefined;
  /** Allocations the evaluation created. */
  allocsByEval(evalID: string): readonly AllocSafetyView[];
}

export function isEvalDeleteSafe(
  evaluation: { readonly ID: string; readonly Namespace: string; readonly JobID: string },
  lookups: DeleteSafetyLookups,
): boolean {
  const job = lookups.job(evaluation.Namespace, evaluation.JobID);
  // A job that is gone, stopped or dead has nothing left to schedule.
  if (job === undefined || job.Stop || job.Status === "dead") return true;
  for (const alloc of lookups.allocsByEval(evaluation.ID)) {
    if (alloc.ClientStatus === "running" || alloc.ClientStatus === "unknown") return false;
    if (alloc.ClientStatus !== "failed") continue;
    const policy = job.TaskGroups?.find((tg) => tg.Name === alloc.TaskGroup)?.ReschedulePolicy;
    const reschedules = policy != null && (policy.Unlimited || policy.Attempts > 0);
    if (!reschedules) continue;
    // A failed allocation the scheduler may still replace: its evaluation
    // carries the reschedule history.
    if (alloc.NextAllocation === "") return false;
    if (policy.Unlimited) return false;
    if ((alloc.RescheduleTracker?.Events?.length ?? 0) === 0) return false;
  }
  return true;
}

/** Lookups for a cluster that keeps neither jobs nor allocations: every job is gone. */
export const NO_JOBS: DeleteSafetyLookups = {
  job: () => undefined,
  allocsByEval: () => [],
};

/** A table of allocations with Nomad's `eval` index (allocations by EvalID). */
export interface AllocsByEvalTable {
  by(index: "eval", value: string): readonly AllocSafetyView[];
}

/**
 * The lookups over the tables this build keeps. The evals projection (at
 * apply) and the delete handler (before appending) both build theirs here
 * from the same tables, so they judge every evaluation alike. Without a
 * jobs table every job reads as gone and, by Nomad's rule, every evaluation
 * is safe.
 */
export function deleteSafetyLookups(tables: object): DeleteSafetyLookups {
  // `object`: the set of tables grows with the build; only `allocs` and `jobs` matter here.
  const { allocs, jobs } = tables as { readonly allocs?: AllocsByEvalTable; readonly jobs?: JobsByKeyTable };
  return {
    job: jobs ? (namespace, jobID) => jobs.get(`${namespace}\u0000${jobID}`) : () => undefined,
    allocsByEval: allocs ? (evalID) => allocs.by("eval", evalID) : () => [],
  };
}

/** A table of jobs keyed by namespace and ID (projections/jobs.ts). */
export interface JobsByKeyTable {
  get(key: string): JobSafetyView | undefined;
}
