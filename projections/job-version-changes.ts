import type { ApplyContext, Change } from "../src/store/projection.ts";
import type { Table } from "../src/store/table.ts";
import type { JobScaled } from "../streams/job-scaling.ts";
import type { JobStabilitySet, TaskGroupSpec } from "../streams/jobs.ts";
import type { DeploymentRow } from "./deployments.ts";
import { jobKey } from "./evals.ts";
import type { JobRow } from "./jobs.ts";

/**
 * The job changes besides register and deregister, applied by the jobs
 * projection: a scaling action's new version, and a version's stability
 * (set by Job.Stable, or by its deployment succeeding, as Nomad's state
 * store does in updateDeploymentStatusImpl).
 */
export interface JobVersionTables {
  readonly jobs: Table<JobRow>;
  readonly versions: Table<JobRow>;
  readonly versionKey: (namespace: string, jobID: string, version: number) => string;
}

/** Nomad's Job.Scale refusals, shared by the handler (first check) and the apply (second). */
export const scaleRefusals = {
  jobNotFound: (jobID: string) => `job "${jobID}" not found`,
  groupMissing: (group: string) => `task group "${group}" specified for scaling does not exist in job`,
  belowMin: (count: number, min: number) =>
    `group count was less than scaling policy minimum: ${count} < ${min}`,
  aboveMax: (count: number, max: number) =>
    `group count was greater than scaling policy maximum: ${count} > ${max}`,
};

/** Nomad's version lookup refusal (Job.Stable, Job.Revert). */
export const versionNotFound = (jobID: string, namespace: string, version: number) =>
  `job "${jobID}" in namespace "${namespace}" at version ${version} not found`;

/** The group's scaling policy bounds a new count must respect; undefined when it does. */
export function scaleCountRefusal(group: TaskGroupSpec, count: number): string | undefined {
  const scaling = group.Scaling as { Min?: number; Max?: number } | null | undefined;
  if (!scaling) return undefined;
  if (typeof scaling.Min === "number" && count < scaling.Min)
    return scaleRefusals.belowMin(count, scaling.Min);
  if (typeof scaling.Max === "number" && scaling.Max < count)
    return scaleRefusals.aboveMax(count, scaling.Max);
  return undefined;
}

/**
 * A scaling action: checked again against the job as it is now; with a
 * count, a new version with the group at that count. Like Nomad's Job.Scale
 * (which registers a copy of the current job), the version keeps its
 * SubmitTime and Stable flag.
 */
export function applyJobScaled(ctx: ApplyContext, t: JobVersionTables, data: JobScaled) {
  const job = t.jobs.get(jobKey(data.Namespace, data.JobID));
  if (!job) return ctx.reject(404, scaleRefusals.jobNotFound(data.JobID));
  const group = job.TaskGroups.find((g) => g.Name === data.TaskGroup);
  if (!group) return ctx.reject(400, scaleRefusals.groupMissing(data.TaskGroup));
  if (data.Count === null) return;
  const refusal = scaleCountRefusal(group, data.Count);
  if (refusal) return ctx.reject(400, refusal);
  const count = data.Count;
  const row: JobRow = {
    ...job,
    TaskGroups: job.TaskGroups.map((g) => (g.Name === data.TaskGroup ? { ...g, Count: count } : g)),
    Version: job.Version + 1,
    ModifyIndex: ctx.index,
    JobModifyIndex: ctx.index,
  };
  ctx.put(t.jobs, row);
  ctx.put(t.versions, row);
}

/** Job.Stable: the version must still exist (its job may have been purged since the handler looked). */
export function applyJobStability(ctx: ApplyContext, t: JobVersionTables, data: JobStabilitySet) {
  if (!t.versions.has(t.versionKey(data.Namespace, data.JobID, data.Version))) {
    return ctx.reject(404, versionNotFound(data.JobID, data.Namespace, data.Version));
  }
  setStability(ctx, t, data.Namespace, data.JobID, data.Version, data.Stable);
}

/** A deployment that turns successful marks its job version stable. */
export function stableOnDeploymentSuccess(ctx: ApplyContext, t: JobVersionTables, change: Change): void {
  const before = change.before as DeploymentRow | undefined;
  const after = change.after as DeploymentRow | undefined;
  if (after?.Status !== "successful" || before?.Status === "successful") return;
  setStability(ctx, t, after.Namespace, after.JobID, after.JobVersion, true);
}

/**
 * Nomad's updateJobStabilityImpl, except that the current job row changes
 * only when it is that version: Nomad re-inserts the version it marks as the
 * job, so marking an older version would roll the job back to it.
 */
function setStability(
  ctx: ApplyContext,
  t: JobVersionTables,
  namespace: string,
  jobID: string,
  version: number,
  stable: boolean,
): void {
  const v = t.versions.get(t.versionKey(namespace, jobID, version));
  if (!v || v.Stable === stable) return;
  ctx.put(t.versions, { ...v, Stable: stable, ModifyIndex: ctx.index });
  const current = t.jobs.get(jobKey(namespace, jobID));
  if (current && current.Version === version) {
    ctx.put(t.jobs, { ...current, Stable: stable, ModifyIndex: ctx.index });
  }
}
