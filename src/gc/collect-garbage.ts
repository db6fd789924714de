import type { AllocRow } from "../../projections/allocs.ts";
import { type EvaluationRow, jobKey } from "../../projections/evals.ts";
import { allocGcEligible, jobIsGcable } from "../../projections/gc.ts";
import type { Projections } from "../../projections/index.ts";
import type { JobRow } from "../../projections/jobs.ts";
import { isTerminalAlloc } from "../../streams/allocs.ts";
import { isTerminalEvalStatus } from "../../streams/evals.ts";
import { GARBAGE_COLLECTED_VERSION, type GarbageCollected, type GcJobRef } from "../../streams/gc.ts";
import { walkByKey } from "../query/walk-by-key.ts";
import type { Table } from "../store/table.ts";
import type { Draft } from "../store/writer.ts";

/** Nomad's thresholds: how long a finished object is kept before collection. */
export interface GcThresholds {
  /** eval_gc_threshold, default 1h. */
  readonly evalMs: number;
  /** batch_eval_gc_threshold, default 24h: batch results are read later. */
  readonly batchEvalMs: number;
  /** job_gc_threshold, default 4h: a job, its evaluations and allocations must all be this old. */
  readonly jobMs: number;
}

export const DEFAULT_GC_THRESHOLDS: GcThresholds = {
  evalMs: 3_600_000,
  batchEvalMs: 86_400_000,
  jobMs: 4 * 3_600_000,
};

export interface GcRun {
  readonly nowMs: number;
  /** Omitted for a forced collection (PUT /v1/system/gc): every age qualifies, as in Nomad. */
  readonly thresholds?: GcThresholds;
}

/** The tables the collector reads. */
export type GcSources = Pick<Projections["tables"], "jobs" | "jobVersions" | "evals" | "allocs">;

/** Batches stay small so each apply stays short (Nomad's MaxUUIDsPerWriteRequest is larger). */
const MAX_PER_EVENT = 1000;

/** What one evaluation's collection would take (Nomad's gcEval). */
interface EvalVerdict {
  readonly gc: boolean;
  readonly allocIDs: readonly string[];
}

const KEEP: EvalVerdict = { gc: false, allocIDs: [] };

/**
 * What can be collected now, as Nomad's core GC decides it (core_sched.go):
 * its job GC (dead batch jobs and stopped jobs whose evaluations and
 * allocations are all collectable, with them), then its eval GC (terminal
 * evaluations and their collectable allocations; a batch job's current
 * allocations only once the job is stopped and dead or gone, since the
 * scheduler would run them again). Allocations whose evaluation is already
 * gone are collected by the same rules. Ages are compared with the object's
 * last change (Nomad maps its thresholds to Raft indexes; the log carries
 * times). Walks the tables in slices; the apply checks every object again.
 * Returns the events to append, allocations before evaluations before jobs.
 */
export async function collectGarbage(tables: GcSources, run: GcRun): Promise<GarbageCollected[]> {
  const { jobs, jobVersions, evals, allocs } = tables;
  const nowNs = run.nowMs * 1e6;
  const cutoffNs = (thresholdMs: (t: GcThresholds) => number) =>
    run.thresholds ? (run.nowMs - thresholdMs(run.thresholds)) * 1e6 : Number.POSITIVE_INFINITY;
  const jobCutoff = cutoffNs((t) => t.jobMs);
  const evalCutoff = cutoffNs((t) => t.evalMs);
  const batchEvalCutoff = cutoffNs((t) => t.batchEvalMs);

  const jobOf = (row: { Namespace: string; JobID: string }) => jobs.get(jobKey(row.Namespace, row.JobID));
  const eligible = (a: AllocRow, job: JobRow | undefined, cutoff: number) =>
    a.ModifyTime <= cutoff && allocGcEligible(a, job, nowNs);
  // Nomad's olderVersionTerminalAllocs: a live batch job keeps the allocations of its current version.
  const olderVersionDone = (a: AllocRow, job: JobRow, cutoff: number) =>
    a.CreateIndex < job.JobModifyIndex && a.ModifyTime <= cutoff && isTerminalAlloc(a);

  const gcEval = (e: EvaluationRow, cutoff: number, allowBatch: boolean): EvalVerdict => {
    if (!isTerminalEvalStatus(e.Status) || e.ModifyTime > cutoff) return KEEP;
    const job = jobOf(e);
    const own = allocs.by("eval", e.ID);
    if (e.Type === "batch" && job && !(job.Status === "dead" && (job.Stop || allowBatch))) {
      const old = own.filter((a) => olderVersionDone(a, job, cutoff)).map((a) => a.ID);
      return { gc: old.length === own.length, allocIDs: old };
    }
    const allocIDs = own.filter((a) => eligible(a, job, cutoff)).map((a) => a.ID);
    return { gc: allocIDs.length === own.length, allocIDs };
  };

  const allocIDs = new Set<string>();
  const evalIDs = new Set<string>();
  const jobRefs: GcJobRef[] = [];

  await walkByKey(jobs, "", (job) => {
    if (!jobIsGcable(job) || createdAtNs(jobVersions, job) > jobCutoff) return true;
    const key = jobKey(job.Namespace, job.ID);
    const jobEvals = new Set<string>();
    const jobAllocs: string[] = [];
    for (const e of evals.by("job", key)) {
      const verdict = gcEval(e, jobCutoff, true);
      if (!verdict.gc) return true;
      jobEvals.add(e.ID);
      jobAllocs.push(...verdict.allocIDs);
    }
    // Allocations whose evaluation is gone go with the job, so none outlives it.
    for (const a of allocs.by("job", key)) {
      if (jobEvals.has(a.EvalID)) continue;
      if (!eligible(a, job, jobCutoff)) return true;
      jobAllocs.push(a.ID);
    }
    for (const id of jobAllocs) allocIDs.add(id);
    for (const id of jobEvals) evalIDs.add(id);
    jobRefs.push({ Namespace: job.Namespace, ID: job.ID });
    return true;
  });

  await walkByKey(evals, "", (e) => {
    if (evalIDs.has(e.ID)) return true;
    const verdict = gcEval(e, e.Type === "batch" ? batchEvalCutoff : evalCutoff, false);
    if (verdict.gc) evalIDs.add(e.ID);
    for (const id of verdict.allocIDs) allocIDs.add(id);
    return true;
  });

  // Not in Nomad, whose allocations always have their evaluation: here an
  // operator's eval delete may leave some without one.
  await walkByKey(allocs, "", (a) => {
    if (allocIDs.has(a.ID) || evals.has(a.EvalID)) return true;
    const job = jobOf(a);
    const batch = (a.Job?.Type ?? job?.Type) === "batch";
    const cutoff = batch ? batchEvalCutoff : evalCutoff;
    const collect =
      batch && job && !(job.Status === "dead" && job.Stop)
        ? olderVersionDone(a, job, cutoff)
        : eligible(a, job, cutoff);
    if (collect) allocIDs.add(a.ID);
    return true;
  });

  return packEvents(run.thresholds ? "periodic" : "forced", [...allocIDs], [...evalIDs], jobRefs);
}

/** The events as drafts to append, at the current schema version. */
export function gcDrafts(events: readonly GarbageCollected[]): Draft[] {
  return events.map((data) => ({ type: "GarbageCollected", v: GARBAGE_COLLECTED_VERSION, data }));
}

/** When this incarnation of the job was registered (Nomad compares its CreateIndex with the threshold). */
function createdAtNs(versions: Table<JobRow>, job: JobRow): number {
  for (const v of versions.withPrefix(`${jobKey(job.Namespace, job.ID)}\u0000`)) {
    if (v.CreateIndex === job.CreateIndex) return v.SubmitTime;
  }
  return job.SubmitTime;
}

/**
 * Up to MAX_PER_EVENT objects per event, allocations first, then
 * evaluations, then jobs: an evaluation is removed only once its allocations
 * are, a job once both are (Nomad's partitionEvalReap, then its job reap).
 */
function packEvents(
  reason: GarbageCollected["Reason"],
  allocIDs: readonly string[],
  evalIDs: readonly string[],
  jobRefs: readonly GcJobRef[],
): GarbageCollected[] {
  const events: GarbageCollected[] = [];
  let a = 0;
  let e = 0;
  let j = 0;
  while (a < allocIDs.length || e < evalIDs.length || j < jobRefs.length) {
    let room = MAX_PER_EVENT;
    const AllocIDs = allocIDs.slice(a, a + room);
    a += AllocIDs.length;
    room -= AllocIDs.length;
    const EvalIDs = evalIDs.slice(e, e + room);
    e += EvalIDs.length;
    room -= EvalIDs.length;
    const Jobs = jobRefs.slice(j, j + room);
    j += Jobs.length;
    events.push({ Reason: reason, EvalIDs, AllocIDs, Jobs });
  }
  return events;
}
