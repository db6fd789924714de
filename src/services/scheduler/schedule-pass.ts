import type { JobRow } from "../../../projections/jobs.ts";
import type { EvaluationSpec } from "../../../streams/evals.ts";
import { scheduleGeneric, scheduleGenericSliced } from "./generic-scheduler.ts";
import type { ScheduleOutcome, SchedulerContext } from "./scheduler-context.ts";
import { scheduleSystem, scheduleSystemSliced } from "./system-scheduler.ts";

export interface PassOptions {
  /** Retries of one evaluation draw a different node order. */
  readonly attempt: number;
  /** A job to schedule in place of the stored one (a dry-run plan). */
  readonly job?: JobRow;
}

const isSystem = (e: EvaluationSpec) => e.Type === "system" || e.Type === "sysbatch";

/** One pass of the scheduler the evaluation's type calls for (system/sysbatch, else generic), at once. */
export function schedulePass(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: PassOptions,
): ScheduleOutcome {
  return isSystem(evaluation)
    ? scheduleSystem(ctx, evaluation, options)
    : scheduleGeneric(ctx, evaluation, options);
}

/**
 * {@link schedulePass} in slices of a few milliseconds with the event loop
 * served between them: for a pass computed on the server's main thread. The
 * tables may move between slices (see runSliced); a pass that must read one
 * index throughout (a replica at a known index) runs at once instead.
 */
export function schedulePassSliced(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: PassOptions,
): Promise<ScheduleOutcome> {
  return isSystem(evaluation)
    ? scheduleSystemSliced(ctx, evaluation, options)
    : scheduleGenericSliced(ctx, evaluation, options);
}
