import type { AllocRow } from "../../../projections/allocs.ts";
import { latestDeployment } from "../../../projections/deployments.ts";
import { jobKey } from "../../../projections/evals.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import { allocUsage } from "../../../projections/resources.ts";
import { isTerminalAlloc } from "../../../streams/allocs.ts";
import { isDeploymentActive } from "../../../streams/deployments.ts";
import { type EvaluationSpec, ZERO_TIME } from "../../../streams/evals.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import { csiViewOf } from "./csi-view.ts";
import { Feasibility } from "./feasibility.ts";
import type { AllocMetric } from "./metrics.ts";
import { Plan, type PlannedAlloc } from "./plan.ts";
import { allowPreemption, appendPreemptions } from "./preemption.ts";
import { inJobPlacement } from "./ready-nodes.ts";
import { type DestructiveResult, type PlaceResult, Reconciler, type UpdateKind } from "./reconciler.ts";
import { rescheduleTrackerFor } from "./reschedule.ts";
import { seededRandom } from "./rng.ts";
import {
  algorithmOf,
  evalPendingIn,
  penaltyNodes,
  type ScheduleOutcome,
  type SchedulerContext,
  taintedNodesSteps,
  updateNonTerminalAllocsToLost,
} from "./scheduler-context.ts";
import { runSliced, runToEnd, type Steps } from "./slices.ts";
import { PlacementStack } from "./stack.ts";
import { tasksUpdated } from "./tasks-updated.ts";

export interface GenericOptions {
  /** Retries of one evaluation draw a different node order. */
  readonly attempt: number;
  /** A job to schedule in place of the stored one (a dry-run plan). */
  readonly job?: JobRow;
}

/**
 * Nomad's GenericScheduler (service and batch jobs), one pass: reconcile the
 * job's allocations with the job, then place what must be placed. Pure: the
 * outcome is a plan and the evaluations it needs; the worker writes them.
 */
export function scheduleGeneric(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: GenericOptions,
): ScheduleOutcome {
  return runToEnd(genericSteps(ctx, evaluation, options));
}

/**
 * {@link scheduleGeneric} in slices of a few milliseconds, the event loop
 * served between them: a job of thousands of allocations does not hold it
 * for the whole computation. Same outcome when the tables do not change
 * meanwhile (see {@link runSliced} for when they do).
 */
export function scheduleGenericSliced(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: GenericOptions,
): Promise<ScheduleOutcome> {
  return runSliced(genericSteps(ctx, evaluation, options));
}

/** The pass as steps, for a driver of one's own (a benchmark timing each slice). */
export function* genericSteps(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: GenericOptions,
): Steps<ScheduleOutcome> {
  const { tables } = ctx;
  const key = jobKey(evaluation.Namespace, evaluation.JobID);
  const job = options.job ?? tables.jobs.get(key);
  const batch = evaluation.Type === "batch";
  const stopped = !job || job.Stop;
  const nowNs = ctx.nowMs * 1e6;
  const plan = new Plan(evaluation.ID, job, tables.allocs, nowNs);
  const deployment = batch
    ? undefined
    : latestDeployment(tables.deployments, evaluation.Namespace, evaluation.JobID);
  const allocs = tables.allocs.by("job", key);
  // Pause points around the passes over every allocation of the job (each is a few ms at 10,000).
  yield;
  const tainted = yield* taintedNodesSteps(tables, allocs);
  updateNonTerminalAllocsToLost(plan, tainted, allocs);
  yield;

  const feasibility = job && !stopped ? new Feasibility(job, csiViewOf(tables)) : undefined;
  let stack: PlacementStack | undefined;
  // Allocations of one job version share its Job object: one comparison per version and group, not per allocation.
  const updatedByVersion = new Map<string, WeakMap<object, boolean>>();
  // Method shorthands, not arrow constants: under tsx (esbuild's keepNames)
  // each arrow made per pass costs a defineProperty of its name (`__name`),
  // 1.7% of a scheduler thread's busy time in a cold registration run.
  const pass = {
    stackFor(j: JobRow): PlacementStack {
      stack ??= newStack(ctx, evaluation, options.attempt, j, plan, feasibility!, batch);
      return stack;
    },
    updated(tg: TaskGroupSpec, existing: AllocRow): boolean {
      const version = existing.Job;
      if (!version) return tasksUpdated(tg, version);
      let byVersion = updatedByVersion.get(tg.Name);
      if (!byVersion) {
        byVersion = new WeakMap();
        updatedByVersion.set(tg.Name, byVersion);
      }
      let answer = byVersion.get(version);
      if (answer === undefined) {
        answer = tasksUpdated(tg, version);
        byVersion.set(version, answer);
      }
      return answer;
    },
    updateKind(existing: AllocRow, tg: TaskGroupSpec): UpdateKind {
      const j = job!;
      if (existing.Job?.JobModifyIndex === j.JobModifyIndex) return "ignore";
      if (pass.updated(tg, existing)) return "destructive";
      if (isTerminalAlloc(existing)) return "ignore";
      const node = tables.nodes.get(existing.NodeID);
      if (!node || !inJobPlacement(j, node)) return "destructive";
      const fits = pass.stackFor(j).selectOn(node, tg, existing.Name, allocUsage(existing));
      return fits.selection ? "inplace" : "destructive";
    },
  };

  const results = yield* new Reconciler({
    jobID: evaluation.JobID,
    namespace: evaluation.Namespace,
    job,
    batch,
    deployment,
    allocs,
    tainted,
    evalID: evaluation.ID,
    evalPriority: evaluation.Priority,
    nowMs: ctx.nowMs,
    evalPending: evalPendingIn(tables),
    newID: ctx.newID,
    updateKind: pass.updateKind,
  }).steps();

  plan.deployment = results.deployment;
  plan.deploymentUpdates = results.deploymentUpdates;
  const ended = new Set(results.deploymentUpdates.map((u) => u.DeploymentID));
  const live = results.deployment ?? (deployment && !ended.has(deployment.ID) ? deployment : undefined);
  plan.deploymentID = live && isDeploymentActive(live.Status) && !stopped ? live.ID : "";
  for (const s of results.stop) plan.appendStop(s.alloc, s.description, s.clientStatus, s.followupEvalID);
  for (const [ID, FollowupEvalID] of results.disconnectUpdates)
    plan.disconnected.push({ ID, FollowupEvalID });
  for (const a of results.reconnectUpdates) plan.reconnected.push(a.ID);
  for (const a of results.inplace) plan.inPlace.push(a.ID);
  for (const [ID, FollowupEvalID] of results.attributeUpdates) plan.followups.push({ ID, FollowupEvalID });
  yield;

  const queued: Record<string, number> = {};
  let failed: Record<string, AllocMetric> | null = null;
  if (results.place.length + results.destructive.length === 0) {
    if (job) for (const tg of job.TaskGroups) queued[tg.Name] = 0;
  } else {
    for (const p of results.place) queued[p.tg.Name] = (queued[p.tg.Name] ?? 0) + 1;
    for (const d of results.destructive) queued[d.tg.Name] = (queued[d.tg.Name] ?? 0) + 1;
    failed = yield* computePlacements(
      ctx,
      pass.stackFor(job!),
      plan,
      results.destructive,
      results.place,
      nowNs,
    );
  }

  const delayInstead = results.followupEvals.length > 0 && evaluation.WaitUntil === ZERO_TIME;
  const followupEvals = results.followupEvals.map((e) =>
    delayInstead ? { ...e, PreviousEval: evaluation.ID } : e,
  );
  return {
    job,
    plan,
    followupEvals,
    failedTGAllocs: failed,
    queuedAllocs: queued,
    deploymentID: (results.deployment ?? deployment)?.ID ?? "",
    classEligibility: feasibility ? feasibility.classEligibility() : new Map(),
    escaped: feasibility?.escaped ?? false,
    desiredTGUpdates: results.desiredTGUpdates,
    delayInstead,
  };
}

function newStack(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  attempt: number,
  job: JobRow,
  plan: Plan,
  feasibility: Feasibility,
  batch: boolean,
): PlacementStack {
  const ready = ctx.readyNodes.list();
  const { byDc, total } = ctx.readyNodes.available(job.Datacenters, job.NodePool);
  const stack = new PlacementStack(
    ctx.tables.nodes,
    ready,
    seededRandom(`${evaluation.ID}/${attempt}`),
    job,
    plan,
    feasibility,
    algorithmOf(ctx.tables, job.NodePool),
    total,
    batch,
    byDc,
  );
  allowPreemption(stack, ctx.tables.schedulerConfig, job);
  return stack;
}

/** Nomad's computePlacements: destructive updates first (their resources are freed), then placements; a pause point after each. */
function* computePlacements(
  ctx: SchedulerContext,
  stack: PlacementStack,
  plan: Plan,
  destructive: readonly DestructiveResult[],
  place: readonly PlaceResult[],
  nowNs: number,
): Steps<Record<string, AllocMetric> | null> {
  let failed: Record<string, AllocMetric> | null = null;
  for (const d of destructive) {
    failed = placeOne(ctx, stack, plan, nowNs, failed, d.name, d.tg, d.stop, false, d.description, false);
    yield;
  }
  for (const p of place) {
    failed = placeOne(
      ctx,
      stack,
      plan,
      nowNs,
      failed,
      p.name,
      p.tg,
      p.previous,
      p.reschedule,
      undefined,
      p.canary === true,
    );
    yield;
  }
  return failed;
}

/**
 * One placement of computePlacements, or its failure added to `failed`
 * (returned, made on the first). A module function, not a closure per
 * pass: under tsx (esbuild's keepNames) each named closure made costs a
 * defineProperty of its name (`__name`), 5% of a pass that places nothing.
 */
function placeOne(
  ctx: SchedulerContext,
  stack: PlacementStack,
  plan: Plan,
  nowNs: number,
  failed: Record<string, AllocMetric> | null,
  name: string,
  tg: TaskGroupSpec,
  prev: AllocRow | undefined,
  reschedule: boolean,
  stopPrev: string | undefined,
  canary: boolean,
): Record<string, AllocMetric> | null {
  const earlier = failed?.[tg.Name];
  if (earlier) {
    earlier.CoalescedFailures++;
    earlier.exhaustResources(tg);
    return failed;
  }
  if (prev && stopPrev !== undefined) plan.appendStop(prev, stopPrev);
  const { selection, metric } = stack.select(
    tg,
    prev ? { penaltyNodes: penaltyNodes(prev), allocName: name } : { allocName: name },
  );
  if (selection) {
    const p = placement(
      ctx.newID(),
      name,
      tg,
      selection.node.ID,
      selection.score,
      metric.NodesEvaluated,
      prev,
      reschedule,
      nowNs,
    );
    const withNetwork = selection.network ? { ...p, ...selection.network } : p;
    const explained =
      stack.explains || metric.eventful ? { ...withNetwork, Metrics: metric.explanation() } : withNetwork;
    plan.appendPlacement(canary ? { ...explained, Canary: true } : explained);
    appendPreemptions(plan, selection);
    return failed;
  }
  metric.exhaustResources(tg);
  const next = failed ?? {};
  next[tg.Name] = metric;
  if (prev && stopPrev !== undefined) plan.popStop(prev);
  return next;
}

/**
 * A placement as the plan records it, its keys always in this order (the
 * record's bytes follow it): built as one literal per shape, a fresh
 * placement being by far the most common.
 */
function placement(
  ID: string,
  Name: string,
  tg: TaskGroupSpec,
  NodeID: string,
  Score: number,
  NodesEvaluated: number,
  prev: AllocRow | undefined,
  reschedule: boolean,
  nowNs: number,
): PlannedAlloc {
  const TaskGroup = tg.Name;
  if (!prev) return { ID, Name, TaskGroup, NodeID, Score, NodesEvaluated, tg };
  const PreviousAllocation = prev.ID;
  if (!reschedule) return { ID, Name, TaskGroup, NodeID, Score, NodesEvaluated, PreviousAllocation, tg };
  const RescheduleTracker = rescheduleTrackerFor(prev, nowNs);
  return { ID, Name, TaskGroup, NodeID, Score, NodesEvaluated, PreviousAllocation, RescheduleTracker, tg };
}
