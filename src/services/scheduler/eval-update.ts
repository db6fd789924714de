import type { EvaluationRow } from "../../../projections/evals.ts";
import type { EvalStatus, EvaluationSpec } from "../../../streams/evals.ts";

/** An evaluation row as the spec written back (the projection stamps the rest). */
export function specOf(row: EvaluationRow): EvaluationSpec {
  const { CreateIndex: _c, ModifyIndex: _m, RelatedEvals: _r, LeaderACL: _l, ...spec } = row;
  return spec;
}

/** What a pass decided that the evaluation's outcome record carries. */
export interface UpdateOfPass {
  readonly deploymentID: string;
  readonly failedTGAllocs: Readonly<Record<string, unknown>> | null;
  readonly queuedAllocs: Readonly<Record<string, number>>;
  readonly snapshotIndex: number;
}

/**
 * Nomad's setStatus record: the evaluation with its outcome. Built here for
 * both the worker and a scheduler thread that encodes it ahead (its bytes
 * must be the worker's, key order included).
 */
export function evalStatusUpdate(
  evaluation: EvaluationRow,
  status: EvalStatus,
  description: string,
  pass: UpdateOfPass | undefined,
  blockedID: string | undefined,
  appliedIndex: number,
  modifyTime: number,
): EvaluationSpec {
  const failedTGAllocs = pass?.failedTGAllocs;
  return {
    ...specOf(evaluation),
    Status: status,
    StatusDescription: description,
    DeploymentID: pass?.deploymentID ?? evaluation.DeploymentID,
    FailedTGAllocs: failedTGAllocs ? { ...failedTGAllocs } : null,
    BlockedEval: blockedID ?? evaluation.BlockedEval,
    QueuedAllocations: pass ? { ...pass.queuedAllocs } : evaluation.QueuedAllocations,
    SnapshotIndex: pass?.snapshotIndex ?? appliedIndex,
    ModifyTime: modifyTime,
  };
}

/** The queued allocations an evaluation records once its pass's placements applied (Nomad's adjustQueuedAllocations). */
export function queuedAfter(
  queuedAllocs: Readonly<Record<string, number>>,
  placed: Readonly<Record<string, number>>,
): Record<string, number> {
  const queued: Record<string, number> = {};
  for (const [tg, n] of Object.entries(queuedAllocs)) queued[tg] = Math.max(0, n - (placed[tg] ?? 0));
  return queued;
}
