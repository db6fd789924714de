import type { EvaluationRow } from "../../../projections/evals.ts";
import type { EvalStatus, EvaluationSpec } from "../../../streams/evals.ts";
import { BLOCKED_EVAL_FAILED_PLACEMENTS, BLOCKED_EVAL_MAX_PLAN_DESC } from "./descriptions.ts";

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

/** What a pass decided that the blocked evaluation it spawns carries. */
export interface BlockOfPass {
  readonly failedTGAllocs: Readonly<Record<string, unknown>> | null;
  readonly classEligibility: ReadonlyMap<string, boolean>;
  readonly escaped: boolean;
  readonly snapshotIndex: number;
}

/** Nomad's CreateBlockedEval: built here for the worker and a scheduler thread alike (see evalStatusUpdate). */
export function blockedEvalSpec(
  evaluation: EvaluationRow,
  pass: BlockOfPass,
  id: string,
  planFailure: boolean,
  now: number,
): EvaluationSpec {
  return {
    ...specOf(evaluation),
    ID: id,
    TriggeredBy: planFailure ? "max-plan-attempts" : "queued-allocs",
    Status: "blocked",
    StatusDescription: planFailure ? BLOCKED_EVAL_MAX_PLAN_DESC : BLOCKED_EVAL_FAILED_PLACEMENTS,
    PreviousEval: evaluation.ID,
    NextEval: "",
    BlockedEval: "",
    Wait: 0,
    WaitUntil: "0001-01-01T00:00:00Z",
    FailedTGAllocs: pass.failedTGAllocs && { ...pass.failedTGAllocs },
    ClassEligibility: pass.escaped ? null : Object.fromEntries(pass.classEligibility),
    EscapedComputedClass: pass.escaped,
    QuotaLimitReached: "",
    QueuedAllocations: null,
    // The index of the tables it was computed against: an unblock after it
    // (capacity that appeared meanwhile) releases it at once.
    SnapshotIndex: pass.snapshotIndex,
    CreateTime: now,
    ModifyTime: now,
  };
}
