import { randomUUID } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import { deletable, scanWindow } from "../../projections/eval-delete-pages.ts";
import { deleteSafetyLookups, isEvalDeleteSafe } from "../../projections/eval-delete-safety.ts";
import { BROKER_NOT_PAUSED, type EvaluationRow } from "../../projections/evals.ts";
import { currentSchedulerConfig } from "../../projections/scheduler-config.ts";
import type { EvaluationsDeleted, EvaluationsDeletedByFilter } from "../../streams/evals.ts";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import type { Filter } from "../query/filter/index.ts";
import type { CreateIndexKey } from "../query/paginator.ts";
import { ApiError } from "./api-error.ts";
import { commit } from "./commit.ts";
import type { ApiContext } from "./context.ts";

/** Nomad's MaxUUIDsPerWriteRequest: 256 KiB of UUIDs. */
export const MAX_IDS_PER_DELETE = 7281;

/**
 * Rows per delete-by-filter record (Nomad: 728, a tenth of MaxUUIDsPerWriteRequest,
 * "a balance between throughput and time we block the FSM apply"). An apply
 * costs about 20 µs per deleted evaluation at a million of them, most of it in
 * the table's indexes and the history observer, so 50 keeps a page near 1 ms.
 * The rest of the 10 ms budget is for what the apply does not control: on a
 * two-core VM, pages were seen to stall 5 to 9 ms with their CPU work
 * unchanged (the profiler's samples stop too, and the thread is not switched
 * out: the virtual CPU is not running). Pages of 100 (2 ms) went over the
 * budget once or twice per million; a million still go in well under a
 * minute (`chronomad bench --eval-delete`).
 */
export const DELETE_PAGE_SIZE = 50;

export interface DeleteResult {
  /** How many the applies deleted (Nomad reports what its handler matched). */
  readonly Count: number;
  /** The index of the last record written, 0 when nothing was to be deleted. */
  readonly Index: number;
}

/** The first half of "validate twice": the broker must be paused before anything is appended. */
export function requireBrokerPaused(ctx: ApiContext): void {
  if (!currentSchedulerConfig(ctx.tables.schedulerConfig).PauseEvalBroker) {
    throw ApiError.badRequest(BROKER_NOT_PAUSED);
  }
}

function safetyCheck(ctx: ApiContext): (row: EvaluationRow) => boolean {
  const lookups = deleteSafetyLookups(ctx.tables);
  return (row) => isEvalDeleteSafe(row, lookups);
}

/** Nomad's Eval.Delete with EvalIDs: every ID must exist and be delete-safe, or nothing is written. */
export async function deleteEvalsByID(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  evalIDs: readonly string[],
): Promise<DeleteResult> {
  requireBrokerPaused(ctx);
  const ids = [...new Set(evalIDs)];
  const isSafe = safetyCheck(ctx);
  for (const id of ids) {
    const row = ctx.tables.evals.get(id);
    if (!row) throw ApiError.notFound("eval not found");
    if (!isSafe(row)) throw ApiError.badRequest(`eval ${id} is not safe to delete`);
  }
  const data: EvaluationsDeleted = { DeleteID: randomUUID(), EvalIDs: ids, UserInitiated: true };
  const index = await commit(ctx, identity, [{ type: "EvaluationsDeleted", v: 1, data }]);
  return { Count: ctx.tables.evalDeletes.get(data.DeleteID)?.Deleted ?? 0, Index: index };
}

/**
 * Delete-by-filter as seed 001 designs it: walk the matching, delete-safe
 * evaluations in the table's order and append one small record per page
 * ({Filter, PerPage, NextToken, LastToken}); each apply finds its page
 * again and deletes it. The walk proceeds one window of `perPage` rows at a
 * time, appending before it moves on, so neither the walk nor an apply holds
 * the event loop for long. Only evaluations that existed when the request
 * arrived are considered: later ones sort after every page.
 */
export async function deleteEvalsByFilter(
  ctx: ApiContext,
  identity: AuthenticatedIdentity,
  filter: Filter,
  perPage = DELETE_PAGE_SIZE,
): Promise<DeleteResult> {
  requireBrokerPaused(ctx);
  const { evals, evalDeletes } = ctx.tables;
  const deleteID = randomUUID();
  const ceiling = ctx.store.appliedIndex;
  const isDeletable = deletable(filter, safetyCheck(ctx));
  let after: CreateIndexKey | undefined;
  let index = 0;
  for (;;) {
    const { page, resumeAfter } = scanWindow(evals, isDeletable, after, ceiling, perPage);
    if (page) {
      const data: EvaluationsDeletedByFilter = {
        DeleteID: deleteID,
        Filter: filter.expression,
        PerPage: perPage,
        NextToken: page.nextToken,
        LastToken: page.lastToken,
        Expected: page.expected,
      };
      try {
        index = await commit(ctx, identity, [{ type: "EvaluationsDeletedByFilter", v: 1, data }]);
      } catch (err) {
        const done = evalDeletes.get(deleteID)?.Deleted ?? 0;
        if (err instanceof ApiError && done > 0) {
          throw new ApiError(err.status, `${err.message} (${done} evaluations were deleted before this)`);
        }
        throw err;
      }
    } else if (resumeAfter) {
      // A window with nothing to delete appends nothing; let other work run before the next one.
      await nextTurn();
    }
    if (!resumeAfter) break;
    after = resumeAfter;
  }
  return { Count: evalDeletes.get(deleteID)?.Deleted ?? 0, Index: index };
}
