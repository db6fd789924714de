import type { Projections } from "../../../projections/index.ts";
import type { EvaluationSpec } from "../../../streams/evals.ts";
import type { EnvelopeCodec } from "../../codec/envelope-codec.ts";
import type { PlanIdentities } from "../../identity/plan-identities.ts";
import type { EncodedDraft, Writable, Written } from "../../store/writer.ts";
import type { AllocMetric } from "./metrics.ts";
import { type PlanResult, submitPlan } from "./plan-applier.ts";
import type { ScheduleOutcome } from "./scheduler-context.ts";
import type { ScheduleOutcomeMessage } from "./threads/messages.ts";
import { outcomeWritables } from "./threads/plan-message.ts";
import { submitThreadPlan } from "./threads/submit-thread-plan.ts";

/** Where a pass's plan goes: the plan queue, the tables it reads the result from, and the identities it signs. */
export interface PlanTarget {
  write(records: readonly Writable[]): Promise<Written>;
  readonly tables: Projections["tables"];
  readonly newID: () => string;
  readonly identities?: PlanIdentities;
}

/**
 * One pass of a scheduler over an evaluation, as the worker reads it,
 * wherever it was computed: what it decided about the evaluation, the log
 * index of the tables it read, and how its plan is submitted.
 */
export interface ComputedPass {
  /** Nomad's Plan.SnapshotIndex: the plan applier re-checks the plan against tables at least this new. */
  readonly snapshotIndex: number;
  /** Nothing to write: a no-op plan and no follow-up evaluation. */
  readonly noOp: boolean;
  readonly queuedAllocs: Readonly<Record<string, number>>;
  /** Per task group that could not be placed, its AllocMetric as Nomad's JSON. */
  readonly failedTGAllocs: Readonly<Record<string, unknown>> | null;
  readonly classEligibility: ReadonlyMap<string, boolean>;
  readonly escaped: boolean;
  readonly deploymentID: string;
  /** Nomad's delayInstead: failures wait for the follow-ups instead of a blocked evaluation. */
  readonly delayInstead: boolean;
  /** Appends the plan (its follow-up evaluations first) and reads back what the second check at apply let through. */
  submit(target: PlanTarget): Promise<PlanResult>;
  /** The ID of the blocked evaluation this pass spawns if its placements fail, when drawn already. */
  readonly blockedID?: string;
  /**
   * The evaluation's outcome records (its blocked evaluation if any, then
   * `updated`) encoded ahead, if this pass brought them and they are these;
   * else undefined. Passes computed on a scheduler thread bring the records
   * they expect when the evaluation completes, its plan applied in full.
   */
  readonly encodedOutcome?: (
    updated: EvaluationSpec,
    blocked: EvaluationSpec | undefined,
  ) => EncodedDraft[] | undefined;
}

/** A pass computed in this thread: the outcome is at hand, and its plan is encoded by the write. */
export interface InProcessPass extends ComputedPass {
  readonly outcome: ScheduleOutcome;
}

export function inProcessPass(outcome: ScheduleOutcome, snapshotIndex: number): InProcessPass {
  return {
    outcome,
    snapshotIndex,
    noOp: outcome.plan.isNoOp() && outcome.followupEvals.length === 0,
    queuedAllocs: outcome.queuedAllocs,
    failedTGAllocs: metricsJson(outcome.failedTGAllocs),
    classEligibility: outcome.classEligibility,
    escaped: outcome.escaped,
    deploymentID: outcome.deploymentID,
    delayInstead: outcome.delayInstead,
    submit(t) {
      return submitPlan(
        (drafts) => t.write(drafts),
        t.tables,
        outcome.plan,
        outcome.followupEvals,
        t.newID,
        t.identities,
        snapshotIndex,
      );
    },
  };
}

/**
 * A pass computed on a scheduler thread: its plan arrives as records
 * encoded there, which the write appends without decoding (the envelope is
 * put around them with the writer's stamp).
 */
export function threadPass(message: ScheduleOutcomeMessage, codec: EnvelopeCodec): ComputedPass {
  return {
    snapshotIndex: message.atIndex,
    noOp: message.noOp,
    queuedAllocs: message.queuedAllocs,
    failedTGAllocs: message.failedTGAllocs,
    classEligibility: message.classEligibility,
    escaped: message.escaped,
    deploymentID: message.deploymentID,
    delayInstead: message.delayInstead,
    // Methods, not arrow properties: under tsx (esbuild's keepNames) each
    // arrow made per pass costs a defineProperty of its name (`__name`).
    submit(t) {
      return submitThreadPlan((records) => t.write(records), codec, t.tables, message, t.identities);
    },
    blockedID: message.update?.blocked?.id,
    encodedOutcome(updated, blocked) {
      return outcomeWritables(codec, message, updated, blocked);
    },
  };
}

export function metricsJson(m: Record<string, AllocMetric> | null): Record<string, unknown> | null {
  if (!m) return null;
  const out: Record<string, unknown> = {};
  for (const [tg, metric] of Object.entries(m)) out[tg] = metric.toJSON();
  return out;
}
