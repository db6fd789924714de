import { type Envelope, schemas } from "./event-schema.ts";

export type EvalStatus = "pending" | "blocked" | "complete" | "failed" | "canceled";

/** Go's zero time.Time as Nomad's JSON writes it: "no WaitUntil". */
export const ZERO_TIME = "0001-01-01T00:00:00Z";

/**
 * Nomad's Evaluation, with Nomad's field names, as the writer decided it.
 * CreateIndex and ModifyIndex are not here: they are the log indexes the
 * projection stamps. Times are Unix nanoseconds (CreateTime, ModifyTime) or
 * RFC 3339 (WaitUntil), as in Nomad's JSON.
 */
export interface EvaluationSpec {
  readonly ID: string;
  readonly Namespace: string;
  readonly Priority: number;
  readonly Type: string;
  readonly TriggeredBy: string;
  readonly JobID: string;
  readonly JobModifyIndex: number;
  readonly NodeID: string;
  readonly NodeModifyIndex: number;
  readonly DeploymentID: string;
  readonly Status: EvalStatus;
  readonly StatusDescription: string;
  /** Nanoseconds. */
  readonly Wait: number;
  readonly WaitUntil: string;
  readonly NextEval: string;
  readonly PreviousEval: string;
  readonly BlockedEval: string;
  readonly FailedTGAllocs: Readonly<Record<string, unknown>> | null;
  readonly ClassEligibility: Readonly<Record<string, boolean>> | null;
  readonly QuotaLimitReached: string;
  readonly EscapedComputedClass: boolean;
  readonly AnnotatePlan: boolean;
  readonly QueuedAllocations: Readonly<Record<string, number>> | null;
  readonly SnapshotIndex: number;
  readonly CreateTime: number;
  readonly ModifyTime: number;
}

/** Evaluations created or updated (by a node change, a job change, the scheduler, the broker). */
export interface EvaluationsUpserted {
  readonly Evals: readonly EvaluationSpec[];
}

/**
 * Evaluations deleted by ID: an operator's `DELETE /v1/evaluations` with
 * EvalIDs (UserInitiated: the eval broker must be paused and each one must be
 * delete-safe), or a garbage collector's reap (not user initiated). IDs no
 * longer present at apply are skipped.
 */
export interface EvaluationsDeleted {
  /** Groups the audit row of one request; chosen by the writer. */
  readonly DeleteID: string;
  readonly EvalIDs: readonly string[];
  readonly UserInitiated: boolean;
}

/**
 * One page of an operator's delete-by-filter (seed 001): not the IDs, but how
 * to find them again. The page is every evaluation from NextToken to
 * LastToken (both `CreateIndex.ID` tokens, inclusive, in the evals table's
 * (CreateIndex, ID) order) that still matches Filter and is still
 * delete-safe when the page is applied. The writer cuts pages so that a range
 * holds at most PerPage evaluations, which bounds the apply; evaluations
 * created later sort after LastToken and are never touched.
 */
export interface EvaluationsDeletedByFilter {
  /** The request this page belongs to: the pages of one request share it and its audit row. */
  readonly DeleteID: string;
  readonly Filter: string;
  readonly PerPage: number;
  /** Token of the first evaluation of the page (inclusive). */
  readonly NextToken: string;
  /** Token of the last evaluation of the page (inclusive). */
  readonly LastToken: string;
  /** How many the writer found to delete in the range; the apply records how many it did. */
  readonly Expected: number;
}

export type EvalEvent =
  | Envelope<"EvaluationsUpserted", EvaluationsUpserted>
  | Envelope<"EvaluationsDeleted", EvaluationsDeleted>
  | Envelope<"EvaluationsDeletedByFilter", EvaluationsDeletedByFilter>;

export const evalSchemas = schemas(
  { type: "EvaluationsUpserted", version: 1 },
  { type: "EvaluationsDeleted", version: 1 },
  { type: "EvaluationsDeletedByFilter", version: 1 },
);

/** An evaluation with Nomad's defaults for every field the caller leaves out. */
export function newEvaluation(
  fields: Pick<EvaluationSpec, "ID" | "Namespace" | "Type" | "TriggeredBy" | "JobID" | "CreateTime"> &
    Partial<EvaluationSpec>,
): EvaluationSpec {
  return {
    Priority: 50,
    JobModifyIndex: 0,
    NodeID: "",
    NodeModifyIndex: 0,
    DeploymentID: "",
    Status: "pending",
    StatusDescription: "",
    Wait: 0,
    WaitUntil: ZERO_TIME,
    NextEval: "",
    PreviousEval: "",
    BlockedEval: "",
    FailedTGAllocs: null,
    ClassEligibility: null,
    QuotaLimitReached: "",
    EscapedComputedClass: false,
    AnnotatePlan: false,
    QueuedAllocations: null,
    SnapshotIndex: 0,
    ModifyTime: fields.CreateTime,
    ...fields,
  };
}

export function isTerminalEvalStatus(status: EvalStatus): boolean {
  return status === "complete" || status === "failed" || status === "canceled";
}
