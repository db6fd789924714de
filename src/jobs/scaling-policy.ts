import {
  SCALING_HORIZONTAL,
  type ScalingPolicySpec,
  scalingPolicyJobKey,
} from "../../streams/job-scaling.ts";
import type { JobSpec, TaskGroupSpec } from "../../streams/jobs.ts";
import { JobShapeError } from "./canonicalize.ts";
import { formatErrors } from "./multierror.ts";

/**
 * A task group's `scaling` block, from the api's form (Min, Max, Policy,
 * Enabled, Type; everything optional) to the server's (Nomad's
 * ApiScalingPolicyToStructs, ScalingPolicy.Canonicalize and TargetTaskGroup):
 * Min defaults to the group's count, Max to -1 (which validation refuses, as
 * Nomad's does: a policy must say its maximum), Enabled to true, Type to
 * horizontal; the target names the job's namespace, the job and the group.
 * The ID is given at register (assignScalingPolicyIDs). Fields the server
 * decides (ID, Target, indexes) are never taken from the caller.
 */
export function withCanonicalScaling(job: JobSpec): JobSpec {
  if (!job.TaskGroups.some(hasScaling)) return job;
  return {
    ...job,
    TaskGroups: job.TaskGroups.map((tg, i) => {
      if (tg.Scaling === undefined || tg.Scaling === null) return tg;
      return { ...tg, Scaling: canonicalPolicy(tg.Scaling, `Job.TaskGroups[${i}].Scaling`, job, tg) };
    }),
  };
}

// Module-level, not a closure per call: under tsx (keepNames) each closure
// created costs a defineProperty of its name, on every registration.
function hasScaling(tg: TaskGroupSpec): boolean {
  return tg.Scaling !== undefined && tg.Scaling !== null;
}

function canonicalPolicy(raw: unknown, path: string, job: JobSpec, tg: TaskGroupSpec): ScalingPolicySpec {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new JobShapeError(`${path} must be an object, not ${Array.isArray(raw) ? "an array" : typeof raw}`);
  }
  const p = raw as Record<string, unknown>;
  const int = (name: string): number | undefined => {
    const v = p[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) {
      throw new JobShapeError(`${path}.${name} must be an integer, not ${typeof v}`);
    }
    return v;
  };
  const type = p.Type;
  if (type !== undefined && type !== null && typeof type !== "string") {
    throw new JobShapeError(`${path}.Type must be a string, not ${typeof type}`);
  }
  const enabled = p.Enabled;
  if (enabled !== undefined && enabled !== null && typeof enabled !== "boolean") {
    throw new JobShapeError(`${path}.Enabled must be a boolean, not ${typeof enabled}`);
  }
  const policy = p.Policy;
  if (policy !== undefined && policy !== null && (typeof policy !== "object" || Array.isArray(policy))) {
    throw new JobShapeError(
      `${path}.Policy must be an object, not ${Array.isArray(policy) ? "an array" : typeof policy}`,
    );
  }
  return {
    ID: "",
    Type: type || SCALING_HORIZONTAL,
    Target: { Namespace: job.Namespace, Job: job.ID, Group: tg.Name },
    Policy: (policy as Record<string, unknown> | null | undefined) ?? null,
    Min: int("Min") ?? tg.Count,
    Max: int("Max") ?? -1,
    Enabled: enabled ?? true,
  };
}

/**
 * Nomad's propagateScalingPolicyIDs: a policy keeps the ID it had in the
 * job's current version (same type and group), others get a new one.
 */
export function assignScalingPolicyIDs(
  job: JobSpec,
  existing: JobSpec | undefined,
  newID: () => string,
): JobSpec {
  if (!job.TaskGroups.some(hasScaling)) return job;
  const previous = new Map<string, string>();
  for (const tg of existing?.TaskGroups ?? []) {
    const p = tg.Scaling as ScalingPolicySpec | null | undefined;
    if (p?.ID) previous.set(scalingPolicyJobKey(p), p.ID);
  }
  return {
    ...job,
    TaskGroups: job.TaskGroups.map((tg) => {
      const p = tg.Scaling as ScalingPolicySpec | null | undefined;
      if (!p) return tg;
      return { ...tg, Scaling: { ...p, ID: previous.get(scalingPolicyJobKey(p)) ?? newID() } };
    }),
  };
}

/** Nomad's agent refusal (command/agent/job_endpoint.go jobUpdate): system jobs run one per node. */
export const SYSTEM_SCALING_REFUSAL = "Task groups with job type system do not support scaling blocks";

export function systemJobScalingRefusal(job: JobSpec): string | undefined {
  return job.Type === "system" && job.TaskGroups.some((tg) => tg.Scaling)
    ? SYSTEM_SCALING_REFUSAL
    : undefined;
}

/**
 * Nomad's TaskGroup.validateScalingPolicy, as the group's validation
 * reports it: one entry (a list of its own), or none.
 */
export function validateGroupScaling(tg: TaskGroupSpec): string | undefined {
  const p = tg.Scaling as ScalingPolicySpec | null | undefined;
  if (!p) return undefined;
  const errors: string[] = [];
  const invalid = (e: string) => errors.push(`Scaling policy invalid: ${e}`);
  if (p.Type === "") invalid("missing scaling policy type");
  else if (p.Type !== SCALING_HORIZONTAL) invalid(`scaling policy type "${p.Type}" is not valid`);
  else if (Object.keys(p.Target).length > 0) {
    if (!p.Target.Namespace) invalid("missing target namespace");
    if (!p.Target.Job) invalid("missing target job");
    if (!p.Target.Group) invalid("missing target group");
  }
  if (p.Max < 0) invalid("maximum count must be specified and non-negative");
  else if (p.Max < p.Min) invalid("maximum count must not be less than minimum count");
  if (p.Min < 0) invalid("minimum count must be specified and non-negative");
  if (p.Max < tg.Count) invalid("task group count must not be greater than maximum count in scaling policy");
  if (tg.Count < p.Min) invalid("task group count must not be less than minimum count in scaling policy");
  if (errors.length === 0) return undefined;
  return `Task group scaling policy validation failed: ${formatErrors(errors)}`;
}
