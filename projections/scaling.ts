import type { ApplyContext, Change, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { Envelope } from "../streams/event-schema.ts";
import {
  JOB_TRACKED_SCALING_EVENTS,
  type JobScaled,
  type ScalingPolicySpec,
  scalingPolicyJobKey,
} from "../streams/job-scaling.ts";
import { jobKey } from "./evals.ts";
import type { JobRow } from "./jobs.ts";

export type ScalingPolicyRow = ScalingPolicySpec & {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
};

/** Nomad's ScalingEvent. Time is Unix nanoseconds. */
export interface ScalingEvent {
  readonly Time: number;
  readonly Count: number | null;
  readonly PreviousCount: number;
  readonly Message: string;
  readonly Error: boolean;
  readonly Meta: Readonly<Record<string, unknown>> | null;
  readonly EvalID: string | null;
  readonly CreateIndex: number;
}

/** Nomad's JobScalingEvents: per task group, the newest events first. */
export interface ScalingEventsRow {
  readonly Namespace: string;
  readonly JobID: string;
  readonly ScalingEvents: Readonly<Record<string, readonly ScalingEvent[]>>;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

const policyJobKey = (p: ScalingPolicySpec) => jobKey(p.Target.Namespace ?? "", p.Target.Job ?? "");

/**
 * Scaling policies and scaling events, as Nomad's state store keeps them
 * beside jobs. The policies are the task groups' `scaling` blocks of each
 * job's current version (updateJobScalingPolicies): a policy keeps its ID
 * and CreateIndex across versions while its type and target stay, and goes
 * when its group does. Both go with the job when it is purged or collected.
 */
export function scalingProjection() {
  const policies = new Table<ScalingPolicyRow>({
    name: "scaling_policies",
    key: (p) => p.ID,
    indexes: { job: policyJobKey, namespace: (p) => p.Target.Namespace ?? "" },
  });
  const events = new Table<ScalingEventsRow>({
    name: "scaling_events",
    key: (e) => jobKey(e.Namespace, e.JobID),
  });

  /** Follows the job's spec: on each new version, and when the job row goes. */
  const jobChanged = (ctx: ApplyContext, change: Change) => {
    const before = change.before as JobRow | undefined;
    const after = change.after as JobRow | undefined;
    if (!after) {
      for (const p of policies.by("job", change.key)) ctx.delete(policies, p.ID);
      if (events.has(change.key)) ctx.delete(events, change.key);
      return;
    }
    if (before && before.JobModifyIndex === after.JobModifyIndex) return;
    // A periodic or dispatched child carries its parent's policies (same IDs): they stay the parent's.
    if (after.ParentID) return;
    syncPolicies(ctx, change.key, after);
  };

  const syncPolicies = (ctx: ApplyContext, key: string, job: JobRow) => {
    const wanted = groupPolicies(job);
    const existing = new Map(policies.by("job", key).map((p) => [scalingPolicyJobKey(p), p]));
    const keep = new Set(wanted.map(scalingPolicyJobKey));
    for (const [k, p] of existing) if (!keep.has(k)) ctx.delete(policies, p.ID);
    for (const w of wanted) {
      const prev = existing.get(scalingPolicyJobKey(w));
      if (prev && samePolicy(prev, w)) continue;
      ctx.put(policies, {
        ...w,
        ID: prev?.ID ?? w.ID,
        CreateIndex: prev?.CreateIndex ?? ctx.index,
        ModifyIndex: ctx.index,
      });
    }
  };

  const scaled = (ctx: ApplyContext, event: Envelope, data: JobScaled) => {
    // The jobs projection refuses an action on a job or group that is gone.
    if (ctx.rejected) return;
    const key = jobKey(data.Namespace, data.JobID);
    const row = events.get(key);
    const entry: ScalingEvent = {
      Time: event.at * 1e6,
      Count: data.Count,
      PreviousCount: data.PreviousCount,
      Message: data.Message,
      Error: data.Error,
      Meta: data.Meta,
      EvalID: data.Eval?.ID ?? null,
      CreateIndex: ctx.index,
    };
    const list = [entry, ...(row?.ScalingEvents[data.TaskGroup] ?? [])].slice(0, JOB_TRACKED_SCALING_EVENTS);
    ctx.put(events, {
      Namespace: data.Namespace,
      JobID: data.JobID,
      ScalingEvents: { ...row?.ScalingEvents, [data.TaskGroup]: list },
      CreateIndex: row?.CreateIndex ?? ctx.index,
      ModifyIndex: ctx.index,
    });
  };

  const projection: Projection = {
    name: "scaling",
    version: 1,
    tables: [policies, events],
    handles: new Set(["JobScaled"]),
    observes: new Set(["jobs"]),
    evolve(ctx, event) {
      scaled(ctx, event, (event as Envelope<"JobScaled", JobScaled>).data);
    },
    observe(ctx, change) {
      jobChanged(ctx, change);
    },
  };
  return { projection, policies, events };
}

/** Nomad's Job.GetScalingPolicies (open source: the groups' policies only), with an ID. */
function groupPolicies(job: JobRow): ScalingPolicySpec[] {
  const out: ScalingPolicySpec[] = [];
  for (const tg of job.TaskGroups) {
    const p = tg.Scaling as ScalingPolicySpec | null | undefined;
    // The register handler gives every policy its ID; one without is not Nomad's shape.
    if (p && typeof p.ID === "string" && p.ID !== "") out.push(p);
  }
  return out;
}

/** Nomad's ScalingPolicy.Diff, negated: equal but for ID and indexes. */
function samePolicy(a: ScalingPolicySpec, b: ScalingPolicySpec): boolean {
  return (
    a.Type === b.Type &&
    a.Min === b.Min &&
    a.Max === b.Max &&
    a.Enabled === b.Enabled &&
    stableJson(a.Target) === stableJson(b.Target) &&
    stableJson(a.Policy) === stableJson(b.Policy)
  );
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

export type ScalingProjection = ReturnType<typeof scalingProjection>;
