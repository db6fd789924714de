import type { EvaluationSpec } from "./evals.ts";
import { type Envelope, schemas } from "./event-schema.ts";

/**
 * Job.Scale: a scaling action on one task group (Nomad's JobScaleRequest).
 * With a Count, the job gets a new version with the group at that count and
 * the evaluation that places it, in this one record (Nomad writes the job,
 * the evaluation and the scaling event in three); without one, only the
 * scaling event is recorded (an autoscaler reporting a decision or an error).
 */
export interface JobScaled {
  readonly Namespace: string;
  readonly JobID: string;
  readonly TaskGroup: string;
  /** The new count; null records the event only. */
  readonly Count: number | null;
  /** The group's count when the action was taken (Nomad takes it in the endpoint too). */
  readonly PreviousCount: number;
  readonly Message: string;
  readonly Error: boolean;
  readonly Meta: Readonly<Record<string, unknown>> | null;
  /** The evaluation of the new version (none without a Count, nor for periodic and parameterized jobs). */
  readonly Eval: EvaluationSpec | null;
}

export type JobScalingEvent = Envelope<"JobScaled", JobScaled>;

export const jobScalingSchemas = schemas({ type: "JobScaled", version: 1 });

/** Nomad's ScalingPolicyTypeHorizontal: the only type a task group's `scaling` block has. */
export const SCALING_HORIZONTAL = "horizontal";

/** Nomad's JobTrackedScalingEvents: the newest events kept per task group. */
export const JOB_TRACKED_SCALING_EVENTS = 20;

/**
 * Nomad's ScalingPolicy as a task group carries it once canonicalized, without
 * the indexes (the scaling policies table stamps them). Target names the
 * Namespace, Job and Group; Policy is opaque (the autoscaler's).
 */
export interface ScalingPolicySpec {
  readonly ID: string;
  readonly Type: string;
  readonly Target: Readonly<Record<string, string>>;
  readonly Policy: Readonly<Record<string, unknown>> | null;
  readonly Min: number;
  readonly Max: number;
  readonly Enabled: boolean;
}

/** Nomad's ScalingPolicy.JobKey: what identifies a policy within its job, across versions. */
export function scalingPolicyJobKey(p: Pick<ScalingPolicySpec, "Type" | "Target">): string {
  return `${p.Type}\u0000${p.Target.Group ?? ""}\u0000${p.Target.Task ?? ""}`;
}
