import type { DeploymentRow } from "../../projections/deployments.ts";
import { isParameterized } from "../../projections/job-children.ts";
import type { JobRow, JobSummaryRow } from "../../projections/jobs.ts";
import { diffJobs, type JobDiff } from "../jobs/job-diff.ts";

/** Nomad's JobSummary as the API shows it (without the status bookkeeping kept beside it). */
export function summaryView(s: JobSummaryRow): Record<string, unknown> {
  return {
    JobID: s.JobID,
    Namespace: s.Namespace,
    Summary: s.Summary,
    Children: s.Children,
    CreateIndex: s.CreateIndex,
    ModifyIndex: s.ModifyIndex,
  };
}

/** Nomad's JobListStub; Meta only with `?meta=true`. */
export function jobStub(
  j: JobRow,
  summary: JobSummaryRow | undefined,
  meta: boolean,
): Record<string, unknown> {
  const stub: Record<string, unknown> = {
    ID: j.ID,
    ParentID: j.ParentID,
    Name: j.Name,
    Namespace: j.Namespace,
    Datacenters: j.Datacenters,
    NodePool: j.NodePool,
    Multiregion: j.Multiregion ?? null,
    Type: j.Type,
    Priority: j.Priority,
    Periodic: j.Periodic !== null,
    ParameterizedJob: isParameterized(j),
    Stop: j.Stop,
    Status: j.Status,
    StatusDescription: j.StatusDescription,
    JobSummary: summary ? summaryView(summary) : null,
    CreateIndex: j.CreateIndex,
    ModifyIndex: j.ModifyIndex,
    JobModifyIndex: j.JobModifyIndex,
    SubmitTime: j.SubmitTime,
  };
  if (meta && j.Meta) stub.Meta = j.Meta;
  return stub;
}

/**
 * Nomad's JobVersionsResponse (without its query meta): the versions newest
 * first, each with its Stable flag, and with `withDiffs` the diff of each
 * version against the one before it (contextual, as `nomad job history -p`
 * prints it; null when there is no pair to diff).
 */
export function jobVersionsView(
  rows: readonly JobRow[],
  withDiffs: boolean,
): { Versions: JobRow[]; Diffs: JobDiff[] | null } {
  const versions = [...rows]
    .sort((a, b) => b.Version - a.Version)
    .map((v) => ({ ...v, Stable: v.Stable ?? false }));
  const diffs: JobDiff[] = [];
  if (withDiffs) {
    for (let i = 0; i + 1 < versions.length; i++) diffs.push(diffJobs(versions[i + 1], versions[i], true));
  }
  return { Versions: versions, Diffs: diffs.length > 0 ? diffs : null };
}

export function deploymentView(d: DeploymentRow): DeploymentRow {
  return d;
}
