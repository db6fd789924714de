import type { AllocRow } from "../../projections/allocs.ts";
import type { DeploymentRow } from "../../projections/deployments.ts";
import { jobKey } from "../../projections/evals.ts";
import type { Projections } from "../../projections/index.ts";
import type { JobRow } from "../../projections/jobs.ts";
import { isTerminalAlloc } from "../../streams/allocs.ts";
import {
  type DeploymentStatusUpdated,
  noRollbackTargetDescription,
  rollbackDescription,
  rollbackNoopDescription,
} from "../../streams/deployments.ts";
import type { EvaluationSpec } from "../../streams/evals.ts";
import { JOB_REGISTERED_VERSION, type JobRegistered } from "../../streams/jobs.ts";
import { latestStableVersion, revertSpecOf, revertSubmissionOf } from "../jobs/revert-spec.ts";
import { specChanged } from "../jobs/spec-changed.ts";
import type { Table } from "../store/table.ts";
import type { Draft } from "../store/writer.ts";

/*
 * What Nomad's deployment watcher decides about one deployment, as pure
 * functions of the tables: whether it promotes itself, when its progress
 * deadline falls, whether that deadline fails it, and the records of a
 * failure (with the auto-revert that goes with it).
 */

/** Nomad's autoPromoteDeployment: every group with canaries auto-promotes and has them all healthy. */
export function autoPromotable(d: DeploymentRow, allocs: Table<AllocRow>): boolean {
  const groups = Object.values(d.TaskGroups);
  if (!groups.some((g) => (g.PlacedCanaries ?? []).length > 0)) return false;
  for (const g of groups) {
    if (g.DesiredCanaries < 1) continue;
    const placed = g.PlacedCanaries ?? [];
    if (!g.AutoPromote || placed.length < g.DesiredCanaries) return false;
    let healthy = 0;
    for (const id of placed) if (allocs.get(id)?.DeploymentStatus?.Healthy === true) healthy++;
    if (healthy !== g.DesiredCanaries) return false;
  }
  return true;
}

/**
 * Nomad's getDeploymentProgressCutoff: the earliest RequireProgressBy (Unix
 * ms) of the groups not done yet; undefined when none has one.
 */
export function progressCutoff(d: DeploymentRow, allocs: Table<AllocRow>): number | undefined {
  const healthy = new Map<string, number>();
  for (const a of allocs.by("deployment", d.ID)) {
    if (isTerminalAlloc(a) || a.DeploymentStatus?.Healthy !== true) continue;
    healthy.set(a.TaskGroup, (healthy.get(a.TaskGroup) ?? 0) + 1);
  }
  let next: number | undefined;
  for (const [tg, g] of Object.entries(d.TaskGroups)) {
    const waitsForPromotion = g.DesiredCanaries !== 0 && !g.Promoted;
    if (!waitsForPromotion && (healthy.get(tg) ?? 0) >= g.DesiredTotal) continue;
    if (isZeroTime(g.RequireProgressBy)) continue;
    const at = Date.parse(g.RequireProgressBy);
    if (Number.isFinite(at) && (next === undefined || at < next)) next = at;
  }
  return next;
}

/** Nomad's shouldFail: a group short of healthy allocations fails it; one with auto_revert also reverts. */
export function shouldFailAtDeadline(
  d: DeploymentRow,
  job: JobRow | undefined,
): { fail: boolean; rollback: boolean } {
  let fail = false;
  for (const [tg, g] of Object.entries(d.TaskGroups)) {
    if (g.DesiredCanaries > 0 && !g.Promoted) {
      if (g.HealthyAllocs >= g.DesiredCanaries) continue;
    } else if (g.HealthyAllocs >= g.DesiredTotal) continue;
    fail = true;
    if (job?.TaskGroups.find((x) => x.Name === tg)?.Update?.AutoRevert) return { fail, rollback: true };
  }
  return { fail, rollback: false };
}

/**
 * The records of a failure: the deployment fails with `base` (and, when
 * `rollback`, the job is reverted to its latest stable version, in Nomad's
 * words); the evaluation goes with the last record, so the scheduler sees
 * the failure and the reverted job together.
 */
export function failureDrafts(
  tables: Pick<Projections["tables"], "jobs" | "jobVersions" | "jobSubmissions">,
  d: DeploymentRow,
  base: string,
  rollback: boolean,
  evaluation: EvaluationSpec | null,
): { drafts: Draft[]; revertedTo: number | undefined; description: string } {
  const job = tables.jobs.get(jobKey(d.Namespace, d.JobID));
  let description = base;
  let revert: JobRow | undefined;
  if (rollback) {
    const stable = latestStableVersion(tables, d.Namespace, d.JobID);
    if (!stable) description = noRollbackTargetDescription(base);
    else if (job && specChanged(job, revertSpecOf(stable))) {
      description = rollbackDescription(base, stable.Version);
      revert = stable;
    } else description = rollbackNoopDescription(base, stable.Version);
  }
  const reverting = revert !== undefined && job !== undefined && evaluation !== null;
  const update: DeploymentStatusUpdated = {
    DeploymentID: d.ID,
    Status: "failed",
    StatusDescription: description,
    Eval: reverting ? null : evaluation,
    ...(reverting ? { RevertedJobVersion: revert!.Version } : {}),
  };
  const drafts: Draft[] = [{ type: "DeploymentStatusUpdated", v: 1, data: update }];
  if (reverting) {
    const registered: JobRegistered = {
      Job: revertSpecOf(revert!),
      Eval: evaluation,
      // Refused at apply if the job changed meanwhile: the newer version stands.
      EnforceIndex: true,
      JobModifyIndex: job!.JobModifyIndex,
      Submission: revertSubmissionOf(tables, revert!),
    };
    drafts.push({ type: "JobRegistered", v: JOB_REGISTERED_VERSION, data: registered });
  }
  return { drafts, revertedTo: reverting ? revert!.Version : undefined, description };
}

function isZeroTime(t: string): boolean {
  return t === "" || t.startsWith("0001-01-01T00:00:00");
}
