import type { ApplyContext, Change, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import { type ClientStatus, isTerminalAlloc } from "../streams/allocs.ts";
import { isTerminalEvalStatus } from "../streams/evals.ts";
import type { Envelope } from "../streams/event-schema.ts";
import type { JobScalingEvent } from "../streams/job-scaling.ts";
import type { JobDeregistered, JobEvent, JobRegistered, JobSpec } from "../streams/jobs.ts";
import type { PeriodicEvent } from "../streams/periodic.ts";
import type { AllocRow } from "./allocs.ts";
import { type EvaluationRow, jobKey } from "./evals.ts";
import {
  applyDispatch,
  applyPeriodicLaunch,
  ChildCountingContext,
  isParameterized,
  isPeriodicActive,
  type JobChildTables,
  periodicLaunchesTable,
  recordLaunch,
} from "./job-children.ts";
import {
  applyJobScaled,
  applyJobStability,
  type JobVersionTables,
  stableOnDeploymentSuccess,
} from "./job-version-changes.ts";
import type { NamespaceRow } from "./namespaces.ts";
import type { NodePoolRow } from "./node-pools.ts";

export type JobStatus = "pending" | "running" | "dead";

/** Nomad's Job as the API shows it: the spec plus what the server decided. */
export type JobRow = JobSpec & {
  /** Always set on a stored job: `default` when the submitter named none. */
  readonly NodePool: string;
  readonly Status: JobStatus;
  readonly StatusDescription: string;
  readonly Stable: boolean;
  readonly Version: number;
  /** Unix nanoseconds. */
  readonly SubmitTime: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
  readonly JobModifyIndex: number;
};

/** Nomad's TaskGroupSummary. */
export interface TaskGroupSummary {
  readonly Queued: number;
  readonly Complete: number;
  readonly Failed: number;
  readonly Running: number;
  readonly Starting: number;
  readonly Lost: number;
  readonly Unknown: number;
}

/**
 * What the job's status is computed from (Nomad's getJobStatus reads the
 * allocation and evaluation tables; counting as they change keeps that O(1)).
 * Not part of Nomad's JobSummary: the API leaves it out.
 */
export interface JobActivity {
  readonly LiveAllocs: number;
  readonly Allocs: number;
  readonly LiveEvals: number;
  readonly Evals: number;
}

export interface JobSummaryRow {
  readonly JobID: string;
  readonly Namespace: string;
  readonly Summary: Readonly<Record<string, TaskGroupSummary>>;
  readonly Children: { readonly Pending: number; readonly Running: number; readonly Dead: number };
  readonly Activity: JobActivity;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

const EMPTY_GROUP: TaskGroupSummary = {
  Queued: 0,
  Complete: 0,
  Failed: 0,
  Running: 0,
  Starting: 0,
  Lost: 0,
  Unknown: 0,
};

const BUCKET: Readonly<Record<ClientStatus, keyof TaskGroupSummary>> = {
  pending: "Starting",
  running: "Running",
  complete: "Complete",
  failed: "Failed",
  lost: "Lost",
  unknown: "Unknown",
};

export const versionKey = (namespace: string, jobID: string, version: number) =>
  `${jobKey(namespace, jobID)}\u0000${String(version).padStart(10, "0")}`;

/** Nomad's "nonexistent namespace" refusal. */
export const nonexistentNamespace = (namespace: string) => `nonexistent namespace "${namespace}"`;

/** Nomad's refusal of a job in a node pool that does not exist (state store and admission hook). */
export const nonexistentNodePool = (jobID: string, pool: string) =>
  `job ${JSON.stringify(jobID)} is in nonexistent node pool ${JSON.stringify(pool)}`;

export interface JobsProjectionDeps {
  readonly namespaces: Table<NamespaceRow>;
  readonly nodePools?: Table<NodePoolRow>;
}

/**
 * Jobs, every version of each (kept after a purge: history is the product),
 * and Nomad's job summaries. The summaries and the job status follow the
 * allocation and evaluation tables by observing their changes, as Nomad's
 * state store updates them in the same transaction.
 */
export function jobsProjection(deps: JobsProjectionDeps) {
  const jobs = new Table<JobRow>({
    name: "jobs",
    key: (j) => jobKey(j.Namespace, j.ID),
    indexes: { namespace: (j) => j.Namespace, type: (j) => j.Type, pool: (j) => j.NodePool },
  });
  const versions = new Table<JobRow>({
    name: "job_versions",
    key: (j) => versionKey(j.Namespace, j.ID, j.Version),
    indexes: { job: (j) => jobKey(j.Namespace, j.ID) },
  });
  const summaries = new Table<JobSummaryRow>({
    name: "job_summary",
    key: (s) => jobKey(s.Namespace, s.JobID),
  });
  const launches = periodicLaunchesTable();
  const childTables: JobChildTables = { jobs, summaries, launches };
  const counting = new ChildCountingContext(jobs, summaries);
  // Allocations and evaluations are read through the changes observed and,
  // when a job is (re)created, counted from their tables.
  let allocsByJob: ((key: string) => readonly AllocRow[]) | undefined;
  let evalsByJob: ((key: string) => readonly EvaluationRow[]) | undefined;

  const latestVersion = (key: string): number | undefined => {
    let last: number | undefined;
    for (const v of versions.withPrefix(`${key}\u0000`)) last = v.Version;
    return last;
  };

  const register = (ctx: ApplyContext, event: Envelope, data: JobRegistered) => {
    const spec = data.Job;
    const key = jobKey(spec.Namespace, spec.ID);
    if (!deps.namespaces.has(spec.Namespace)) return ctx.reject(400, nonexistentNamespace(spec.Namespace));
    // Records from before node pools name none: those jobs ran in `default`.
    const nodePool = spec.NodePool || "default";
    if (deps.nodePools && !deps.nodePools.has(nodePool))
      return ctx.reject(400, nonexistentNodePool(spec.ID, nodePool));
    const existing = jobs.get(key);
    if (data.EnforceIndex) {
      const refusal = enforceIndexRefusal(data.JobModifyIndex, existing);
      if (refusal) return ctx.reject(409, refusal);
    }
    if (data.Eval && (spec.Periodic || isParameterized(spec))) {
      return ctx.reject(400, periodicEvalRefusal);
    }
    const previous = existing?.Version ?? latestVersion(key);
    const version = previous === undefined ? 0 : previous + 1;
    let summary = summaries.get(key) ?? freshSummary(spec, ctx.index);
    summary = withGroups(summary, spec);
    if (data.Eval) summary = withActivity(summary, { LiveEvals: 1, Evals: 1 });
    const row = jobRowOf(spec, {
      NodePool: nodePool,
      Status: jobStatus(spec, summary.Activity),
      StatusDescription: "",
      Stable: false,
      Version: version,
      SubmitTime: event.at * 1e6,
      CreateIndex: existing?.CreateIndex ?? ctx.index,
      ModifyIndex: ctx.index,
      JobModifyIndex: ctx.index,
    });
    ctx.put(jobs, row);
    ctx.put(versions, row);
    ctx.put(summaries, summary);
    // Nomad records the insertion time as the first launch: a launch missed before any is told from it.
    if (isPeriodicActive(row) && !launches.has(key))
      recordLaunch(ctx, childTables, row.Namespace, row.ID, event.at);
  };

  const deregister = (ctx: ApplyContext, event: Envelope, data: JobDeregistered) => {
    const key = jobKey(data.Namespace, data.JobID);
    const existing = jobs.get(key);
    if (!existing) return ctx.reject(404, "job not found");
    if (data.Purge) {
      ctx.delete(jobs, key);
      ctx.delete(summaries, key);
      // Always, as Nomad: the job may have stopped being periodic since its last launch.
      if (launches.has(key)) ctx.delete(launches, key);
      return;
    }
    let summary = summaries.get(key) ?? freshSummary(existing, ctx.index);
    if (data.Eval) summary = withActivity(summary, { LiveEvals: 1, Evals: 1 });
    const row: JobRow = {
      ...existing,
      Stop: true,
      Status: jobStatus({ ...existing, Stop: true }, summary.Activity),
      Stable: false,
      Version: existing.Version + 1,
      SubmitTime: event.at * 1e6,
      ModifyIndex: ctx.index,
      JobModifyIndex: ctx.index,
    };
    ctx.put(jobs, row);
    ctx.put(versions, row);
    ctx.put(summaries, summary);
  };

  /** A summary for a job seen for the first time (or again after a purge), counting what already exists. */
  function freshSummary(spec: Pick<JobSpec, "ID" | "Namespace">, index: number): JobSummaryRow {
    const key = jobKey(spec.Namespace, spec.ID);
    let LiveAllocs = 0;
    let Allocs = 0;
    for (const a of allocsByJob?.(key) ?? []) {
      Allocs++;
      if (!isTerminalAlloc(a)) LiveAllocs++;
    }
    let LiveEvals = 0;
    let Evals = 0;
    for (const e of evalsByJob?.(key) ?? []) {
      Evals++;
      if (!isTerminalEvalStatus(e.Status)) LiveEvals++;
    }
    return {
      JobID: spec.ID,
      Namespace: spec.Namespace,
      Summary: {},
      Children: { Pending: 0, Running: 0, Dead: 0 },
      Activity: { LiveAllocs, Allocs, LiveEvals, Evals },
      CreateIndex: index,
      ModifyIndex: index,
    };
  }

  /** Folds one allocation or evaluation change into its job's summary and status. */
  const observe = (ctx: ApplyContext, change: Change) => {
    if (change.table === "allocs" && countsNothing(change.before as AllocRow, change.after as AllocRow))
      return;
    const row = (change.after ?? change.before) as AllocRow | EvaluationRow;
    const key = jobKey(row.Namespace, row.JobID);
    const summary = summaries.get(key);
    if (!summary) return;
    const next =
      change.table === "allocs"
        ? allocChanged(
            summary,
            change.before as AllocRow | undefined,
            change.after as AllocRow | undefined,
            ctx.index,
          )
        : evalChanged(
            summary,
            change.before as EvaluationRow | undefined,
            change.after as EvaluationRow | undefined,
            ctx.index,
          );
    if (next === summary) return;
    ctx.put(summaries, next);
    const job = jobs.get(key);
    if (!job) return;
    // Allocations and evaluations are deleted only by an evaluation delete or
    // garbage collection, after which Nomad computes the status with
    // evalDelete: a job with nothing left is dead, not pending.
    const status = jobStatus(job, next.Activity, change.after === undefined);
    if (status !== job.Status) ctx.put(jobs, { ...job, Status: status, ModifyIndex: ctx.index });
  };

  const versionTables: JobVersionTables = { jobs, versions, versionKey };

  /** An evaluation this record creates: the evals projection applies it after this one, unobserved here. */
  const countNewEval = (ctx: ApplyContext, key: string) => {
    const summary = summaries.get(key);
    if (!summary) return;
    const next = withActivity(summary, { LiveEvals: 1, Evals: 1 });
    ctx.put(summaries, next);
    const job = jobs.get(key);
    const status = job && jobStatus(job, next.Activity);
    if (job && status !== job.Status) ctx.put(jobs, { ...job, Status: status!, ModifyIndex: ctx.index });
  };

  const projection: Projection = {
    name: "jobs",
    // 3: rows carry NodePool. 4: scaling actions, stability (set, and from successful deployments).
    // 5: periodic launches, dispatched children, and the parents' Children counts.
    version: 5,
    tables: [jobs, versions, summaries, launches],
    reads: deps.nodePools ? ["namespaces", "node_pools"] : ["namespaces"],
    handles: new Set([
      "JobRegistered",
      "JobDeregistered",
      "JobStabilitySet",
      "JobScaled",
      "PeriodicJobLaunched",
      "JobDispatched",
    ]),
    observes: new Set(["allocs", "evals", "deployments"]),
    evolve(outer, event) {
      const ctx = counting.wrap(outer);
      const e = event as JobEvent | JobScalingEvent | PeriodicEvent;
      switch (e.type) {
        case "JobRegistered":
          return register(ctx, e, e.data);
        case "JobDeregistered":
          return deregister(ctx, e, e.data);
        case "JobScaled":
          applyJobScaled(ctx, versionTables, e.data);
          if (!ctx.rejected && e.data.Eval) countNewEval(ctx, jobKey(e.data.Namespace, e.data.JobID));
          return;
        case "JobStabilitySet":
          return applyJobStability(ctx, versionTables, e.data);
        case "PeriodicJobLaunched":
          return applyPeriodicLaunch(ctx, childTables, e, e.data, register);
        case "JobDispatched":
          return applyDispatch(ctx, childTables, e, e.data, register);
      }
    },
    observe(outer, change) {
      const ctx = counting.wrap(outer);
      if (change.table === "deployments") return stableOnDeploymentSuccess(ctx, versionTables, change);
      observe(ctx, change);
    },
  };

  return {
    projection,
    jobs,
    versions,
    summaries,
    launches,
    /** Gives the projection the tables it counts from when a job is first seen (they are built after it). */
    bind(allocs: Table<AllocRow>, evals: Table<EvaluationRow>) {
      allocsByJob = (key) => allocs.by("job", key);
      evalsByJob = (key) => evals.by("job", key);
    },
  };
}

/** A registration of a periodic or parameterized job carries no evaluation (Nomad creates none). */
export const periodicEvalRefusal =
  "periodic and parameterized jobs are registered without an evaluation: their children are evaluated";

/** The fields of a job row the server decides, in the order a row lists them after the spec's. */
export type JobServerFields = Pick<
  JobRow,
  | "NodePool"
  | "Status"
  | "StatusDescription"
  | "Stable"
  | "Version"
  | "SubmitTime"
  | "CreateIndex"
  | "ModifyIndex"
  | "JobModifyIndex"
>;

/**
 * A stored job row: the spec's fields in the spec's order, then the
 * server's (one the spec already has keeps its place), as
 * `{ ...spec, NodePool, Status, ... }` would give. Not that literal: V8
 * starts it as a clone of the spec whose keys added after the spread soon
 * made new hidden classes (after a few hundred jobs rows no longer shared
 * one): 40–100 µs a row in a micro-benchmark, against 0.5–2.6 µs for a
 * copy by Object.assign and named stores, whose rows share one hidden
 * class; and every access to job rows downstream met new classes.
 */
export function jobRowOf(spec: JobSpec, server: JobServerFields): JobRow {
  const row = Object.assign({}, spec) as { -readonly [K in keyof JobRow]: JobRow[K] };
  row.NodePool = server.NodePool;
  row.Status = server.Status;
  row.StatusDescription = server.StatusDescription;
  row.Stable = server.Stable;
  row.Version = server.Version;
  row.SubmitTime = server.SubmitTime;
  row.CreateIndex = server.CreateIndex;
  row.ModifyIndex = server.ModifyIndex;
  row.JobModifyIndex = server.JobModifyIndex;
  return row;
}

/** Nomad's Job.Register EnforceIndex check; undefined when the write may go ahead. */
export function enforceIndexRefusal(
  jobModifyIndex: number,
  existing: JobRow | undefined,
): string | undefined {
  const prefix = "Enforcing job modify index";
  if (existing) {
    if (jobModifyIndex === 0) return `${prefix} 0: job already exists`;
    if (jobModifyIndex !== existing.JobModifyIndex) {
      return `${prefix} ${jobModifyIndex}: job exists with conflicting job modify index: ${existing.JobModifyIndex}`;
    }
    return undefined;
  }
  return jobModifyIndex !== 0 ? `${prefix} ${jobModifyIndex}: job does not exist` : undefined;
}

/**
 * Nomad's getJobStatus, from the counts instead of a scan. `evalDelete`:
 * computed after evaluations or allocations were deleted, when having none
 * left means they were collected, not that none was ever made.
 */
export function jobStatus(
  job: Pick<JobSpec, "Type" | "Stop" | "Periodic" | "ParameterizedJob" | "Dispatched">,
  a: JobActivity,
  evalDelete = false,
): JobStatus {
  if (job.Type === "system" || job.Periodic || isParameterized(job)) return job.Stop ? "dead" : "running";
  if (a.LiveAllocs > 0) return "running";
  if (a.LiveEvals > 0) return "pending";
  if (evalDelete || a.Allocs > 0 || a.Evals > 0) return "dead";
  return "pending";
}

/**
 * The summary with an empty entry for each of the spec's groups it lacks.
 * A loop, not `TaskGroups.filter(...)`: the builtin's array and TurboFan's
 * inlined one differ in hidden class, and the optimized apply (main
 * thread and replica) deoptimized on its own `missing` list in every cold
 * server; nothing is allocated when no group is new, the usual case.
 */
function withGroups(summary: JobSummaryRow, spec: JobSpec): JobSummaryRow {
  let groups: Record<string, TaskGroupSummary> | undefined;
  for (const tg of spec.TaskGroups) {
    if (summary.Summary[tg.Name] !== undefined) continue;
    groups ??= { ...summary.Summary };
    groups[tg.Name] = EMPTY_GROUP;
  }
  return groups ? { ...summary, Summary: groups } : summary;
}

function withActivity(summary: JobSummaryRow, delta: Partial<JobActivity>): JobSummaryRow {
  const a = summary.Activity;
  return {
    ...summary,
    Activity: {
      LiveAllocs: Math.max(0, a.LiveAllocs + (delta.LiveAllocs ?? 0)),
      Allocs: Math.max(0, a.Allocs + (delta.Allocs ?? 0)),
      LiveEvals: Math.max(0, a.LiveEvals + (delta.LiveEvals ?? 0)),
      Evals: Math.max(0, a.Evals + (delta.Evals ?? 0)),
    },
  };
}

/** Nomad's updateSummaryWithAlloc, plus the activity counts. */
function allocChanged(
  summary: JobSummaryRow,
  before: AllocRow | undefined,
  after: AllocRow | undefined,
  index: number,
): JobSummaryRow {
  const dLive = liveAlloc(after) - liveAlloc(before);
  const dAll = (after ? 1 : 0) - (before ? 1 : 0);
  const activity = dLive !== 0 || dAll !== 0 ? addedAllocs(summary.Activity, dLive, dAll) : undefined;
  const group = after ? summary.Summary[after.TaskGroup] : undefined;
  let updated: TaskGroupSummary | undefined;
  if (!after || !group) {
    // Nothing of a group to count.
  } else if (!before) {
    if (after.ClientStatus === "pending") {
      updated = { ...group, Starting: group.Starting + 1, Queued: Math.max(0, group.Queued - 1) };
    }
  } else if (before.ClientStatus !== after.ClientStatus) {
    const inc = BUCKET[after.ClientStatus];
    const dec = BUCKET[before.ClientStatus];
    const g: Record<keyof TaskGroupSummary, number> = { ...group };
    g[inc] += 1;
    if (g[dec] > 0) g[dec] -= 1;
    updated = g;
  }
  // One new row per change (a placement changes both), with the keys in
  // the order the row has them: the same row as spreading it twice.
  if (updated) {
    // Assigned, not a computed key after the spread: V8 builds that literal on a slow path.
    const groups: Record<string, TaskGroupSummary> = { ...summary.Summary };
    groups[after!.TaskGroup] = updated;
    return { ...summary, Summary: groups, Activity: activity ?? summary.Activity, ModifyIndex: index };
  }
  return activity ? { ...summary, Activity: activity } : summary;
}

/**
 * An allocation change allocChanged would fold into nothing: neither new
 * nor deleted, the same client status and liveness (a client's report of
 * its task states, most of them). Told before the job's key is joined and
 * its summary looked up.
 */
function countsNothing(before: AllocRow | undefined, after: AllocRow | undefined): boolean {
  return (
    before !== undefined &&
    after !== undefined &&
    before.ClientStatus === after.ClientStatus &&
    liveAlloc(before) === liveAlloc(after)
  );
}

/**
 * Module functions, not closures made per change: tsx names every closure
 * it compiles, a property write per creation on the apply's hottest path.
 */
function liveAlloc(a: AllocRow | undefined): number {
  return a && !isTerminalAlloc(a) ? 1 : 0;
}

function liveEval(e: EvaluationRow | undefined): number {
  return e && !isTerminalEvalStatus(e.Status) ? 1 : 0;
}

/** withActivity's sums for an allocation change, without its delta object. */
function addedAllocs(a: JobActivity, dLive: number, dAll: number): JobActivity {
  return {
    LiveAllocs: Math.max(0, a.LiveAllocs + dLive),
    Allocs: Math.max(0, a.Allocs + dAll),
    LiveEvals: Math.max(0, a.LiveEvals),
    Evals: Math.max(0, a.Evals),
  };
}

/** Nomad's nestedUpsertEval summary part (Queued from QueuedAllocations), plus the activity counts. */
function evalChanged(
  summary: JobSummaryRow,
  before: EvaluationRow | undefined,
  after: EvaluationRow | undefined,
  index: number,
): JobSummaryRow {
  const dLive = liveEval(after) - liveEval(before);
  const dAll = (after ? 1 : 0) - (before ? 1 : 0);
  let next = dLive !== 0 || dAll !== 0 ? withActivity(summary, { LiveEvals: dLive, Evals: dAll }) : summary;
  const queued = after?.QueuedAllocations;
  if (!queued) return next;
  let groups: Record<string, TaskGroupSummary> | undefined;
  for (const [tg, n] of Object.entries(queued)) {
    const group = next.Summary[tg];
    if (!group || group.Queued === n) continue;
    groups ??= { ...next.Summary };
    groups[tg] = { ...group, Queued: n };
  }
  if (groups) next = { ...next, Summary: groups, ModifyIndex: index };
  return next;
}

export type JobsProjection = ReturnType<typeof jobsProjection>;
