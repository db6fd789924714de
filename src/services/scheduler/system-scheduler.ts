import type { AllocRow } from "../../../projections/allocs.ts";
import { jobKey } from "../../../projections/evals.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { allocUsage } from "../../../projections/resources.ts";
import {
  disconnectExpired,
  isTerminalAlloc,
  maxClientDisconnectMs,
  needsToReconnect,
} from "../../../streams/allocs.ts";
import type { EvaluationSpec } from "../../../streams/evals.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import { ranSuccessfully } from "./alloc-sets.ts";
import { csiViewOf } from "./csi-view.ts";
import { ALLOC_LOST, ALLOC_NODE_TAINTED, ALLOC_NOT_NEEDED, ALLOC_UPDATING } from "./descriptions.ts";
import { Feasibility } from "./feasibility.ts";
import type { AllocMetric } from "./metrics.ts";
import { Plan } from "./plan.ts";
import { allowPreemption, appendPreemptions } from "./preemption.ts";
import { inJobPlacement, isReadyNode } from "./ready-nodes.ts";
import { seededRandom } from "./rng.ts";
import {
  algorithmOf,
  type ScheduleOutcome,
  type SchedulerContext,
  taintedNodesSteps,
  updateNonTerminalAllocsToLost,
} from "./scheduler-context.ts";
import { runSliced, runToEnd, type Steps } from "./slices.ts";
import { PlacementStack } from "./stack.ts";
import { tasksUpdated } from "./tasks-updated.ts";

interface Tuple {
  readonly name: string;
  readonly tg: TaskGroupSpec | undefined;
  readonly alloc: AllocRow | undefined;
  readonly nodeID: string;
}

interface Diff {
  place: Tuple[];
  update: Tuple[];
  migrate: Tuple[];
  stop: Tuple[];
  ignore: Tuple[];
  lost: Tuple[];
  disconnecting: Tuple[];
  reconnecting: Tuple[];
}

/**
 * Nomad's SystemScheduler (system and sysbatch jobs), one pass: one
 * allocation of each group on every ready node of the job's datacenters,
 * decided node by node (diffSystemAllocsForNode).
 */
export function scheduleSystem(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: SystemOptions,
): ScheduleOutcome {
  return runToEnd(systemSteps(ctx, evaluation, options));
}

/** {@link scheduleSystem} in slices of a few milliseconds (see {@link runSliced}). */
export function scheduleSystemSliced(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: SystemOptions,
): Promise<ScheduleOutcome> {
  return runSliced(systemSteps(ctx, evaluation, options));
}

export interface SystemOptions {
  readonly attempt: number;
  /** A job to schedule in place of the stored one (a dry-run plan). */
  readonly job?: JobRow;
}

/** The pass itself, with a pause point after each node diffed and each placement. */
function* systemSteps(
  ctx: SchedulerContext,
  evaluation: EvaluationSpec,
  options: SystemOptions,
): Steps<ScheduleOutcome> {
  const { tables } = ctx;
  const { attempt } = options;
  const key = jobKey(evaluation.Namespace, evaluation.JobID);
  const job = options.job ?? tables.jobs.get(key);
  const sysbatch = evaluation.Type === "sysbatch";
  const stopped = !job || job.Stop;
  const plan = new Plan(evaluation.ID, job, tables.allocs, ctx.nowMs * 1e6);
  const allocs = tables.allocs.by("job", key);
  const tainted = yield* taintedNodesSteps(tables, allocs);
  updateNonTerminalAllocsToLost(plan, tainted, allocs);

  const eligible = new Map<string, NodeRow>();
  if (job && !stopped) {
    for (const id of ctx.readyNodes.list()) {
      const n = tables.nodes.get(id);
      if (n && isReadyNode(n) && inJobPlacement(job, n)) eligible.set(id, n);
    }
  }
  const live: AllocRow[] = [];
  const terminal = new Map<string, AllocRow>();
  for (const a of allocs) {
    if (!isTerminalAlloc(a)) {
      live.push(a);
      continue;
    }
    const k = `${a.NodeID}\u0000${a.Name}`;
    const prev = terminal.get(k);
    if (!prev || a.CreateIndex > prev.CreateIndex) terminal.set(k, a);
  }
  const required = new Map<string, TaskGroupSpec>();
  if (job && !stopped) {
    for (const tg of job.TaskGroups)
      for (let i = 0; i < tg.Count; i++) required.set(`${job.Name}.${tg.Name}[${i}]`, tg);
  }
  const byNode = new Map<string, AllocRow[]>();
  for (const a of live) {
    const on = byNode.get(a.NodeID);
    if (on) on.push(a);
    else byNode.set(a.NodeID, [a]);
  }
  for (const id of eligible.keys()) if (!byNode.has(id)) byNode.set(id, []);

  const diff: Diff = {
    place: [],
    update: [],
    migrate: [],
    stop: [],
    ignore: [],
    lost: [],
    disconnecting: [],
    reconnecting: [],
  };
  for (const nodeID of [...byNode.keys()].sort()) {
    diffForNode(ctx, job, sysbatch, nodeID, eligible, tainted, required, byNode.get(nodeID)!, terminal, diff);
    yield;
  }

  for (const t of diff.stop) plan.appendStop(t.alloc!, ALLOC_NOT_NEEDED);
  for (const t of diff.migrate) plan.appendStop(t.alloc!, ALLOC_NODE_TAINTED);
  for (const t of diff.lost) plan.appendStop(t.alloc!, ALLOC_LOST, "lost");
  for (const t of diff.disconnecting) plan.disconnected.push({ ID: t.alloc!.ID, FollowupEvalID: "" });
  for (const t of diff.reconnecting) plan.reconnected.push(t.alloc!.ID);

  const feasibility = job && !stopped ? new Feasibility(job, csiViewOf(tables)) : undefined;
  const { byDc, total } = job
    ? ctx.readyNodes.available(job.Datacenters, job.NodePool)
    : { byDc: {}, total: 0 };
  const stack =
    job && feasibility
      ? new PlacementStack(
          tables.nodes,
          [],
          seededRandom(`${evaluation.ID}/${attempt}`),
          job,
          plan,
          feasibility,
          algorithmOf(tables, job.NodePool),
          total,
          false,
          byDc,
        )
      : undefined;
  if (stack && job) allowPreemption(stack, tables.schedulerConfig, job);

  // In-place where the tasks did not change, otherwise stop and place again (rolling if the job says so).
  const destructive: Tuple[] = [];
  for (const t of diff.update) {
    const a = t.alloc!;
    const node = tables.nodes.get(t.nodeID);
    if (
      stack &&
      node &&
      t.tg &&
      !tasksUpdated(t.tg, a.Job) &&
      !isTerminalAlloc(a) &&
      stack.selectOn(node, t.tg, a.Name, allocUsage(a)).selection
    ) {
      plan.inPlace.push(a.ID);
    } else destructive.push(t);
    yield;
  }
  let limit = destructive.length;
  if (job && !stopped && job.Update && job.Update.MaxParallel > 0) limit = job.Update.MaxParallel;
  for (const t of destructive) {
    if (limit <= 0) break;
    limit--;
    if (!isTerminalAlloc(t.alloc!)) plan.appendStop(t.alloc!, ALLOC_UPDATING);
    diff.place.push(t);
  }

  const queued: Record<string, number> = {};
  let failed: Record<string, AllocMetric> | null = null;
  if (diff.place.length === 0) {
    if (job && !stopped) for (const tg of job.TaskGroups) queued[tg.Name] = 0;
  } else if (stack) {
    for (const t of diff.place) queued[t.tg!.Name] = (queued[t.tg!.Name] ?? 0) + 1;
    for (const t of diff.place) {
      yield;
      const tg = t.tg!;
      const node = tables.nodes.get(t.nodeID);
      if (!node) continue;
      const { selection, metric } = stack.selectOn(node, tg, t.name);
      if (selection) {
        plan.appendPlacement({
          ID: ctx.newID(),
          Name: t.name,
          TaskGroup: tg.Name,
          NodeID: node.ID,
          Score: selection.score,
          NodesEvaluated: metric.NodesEvaluated,
          ...(t.alloc && t.alloc.NodeID === node.ID && isTerminalAlloc(t.alloc)
            ? { PreviousAllocation: t.alloc.ID }
            : {}),
          ...selection.network,
          tg,
        });
        appendPreemptions(plan, selection);
        continue;
      }
      if (metric.NodesFiltered > 0) {
        // A node the group cannot run on is not a failure: nothing is owed there.
        queued[tg.Name] = (queued[tg.Name] ?? 1) - 1;
        continue;
      }
      const earlier = failed?.[tg.Name];
      if (earlier) {
        earlier.CoalescedFailures++;
        earlier.exhaustResources(tg);
        continue;
      }
      metric.exhaustResources(tg);
      failed ??= {};
      failed[tg.Name] = metric;
    }
  }
  return {
    job,
    plan,
    followupEvals: [],
    failedTGAllocs: failed,
    queuedAllocs: queued,
    deploymentID: "",
    classEligibility: feasibility ? feasibility.classEligibility() : new Map(),
    escaped: feasibility?.escaped ?? false,
    desiredTGUpdates: {},
    delayInstead: false,
  };
}

/** Nomad's diffSystemAllocsForNode. */
function diffForNode(
  ctx: SchedulerContext,
  job: JobRow | undefined,
  sysbatch: boolean,
  nodeID: string,
  eligible: ReadonlyMap<string, NodeRow>,
  tainted: ReadonlyMap<string, NodeRow | null>,
  required: ReadonlyMap<string, TaskGroupSpec>,
  allocs: readonly AllocRow[],
  terminal: ReadonlyMap<string, AllocRow>,
  out: Diff,
): void {
  const existing = new Set<string>();
  for (const a of allocs) {
    existing.add(a.Name);
    const tg = required.get(a.Name);
    const t: Tuple = { name: a.Name, tg, alloc: a, nodeID };
    if (!tg) {
      out.stop.push(t);
      continue;
    }
    const sdc = maxClientDisconnectMs(a) !== undefined;
    let reconnect = false;
    let expired = false;
    if (sdc && (a.ClientStatus === "unknown" || a.ClientStatus === "running")) {
      reconnect = needsToReconnect(a);
      if (reconnect) expired = disconnectExpired(a, ctx.nowMs);
    }
    if (!isTerminalAlloc(a) && a.DesiredTransition.Migrate === true) {
      out.migrate.push(t);
      continue;
    }
    if (sysbatch && isTerminalAlloc(a)) {
      out.ignore.push(t);
      continue;
    }
    if (sdc && expired) {
      out.lost.push(t);
      continue;
    }
    if (sdc && a.ClientStatus === "unknown" && a.DesiredStatus === "run") {
      out.ignore.push(t);
      continue;
    }
    const isTainted = tainted.has(a.NodeID);
    const node = tainted.get(a.NodeID) ?? null;
    if (sdc && !isTainted && reconnect) {
      out.reconnecting.push(t);
      continue;
    }
    if (isTainted) {
      if (a.Job?.Type === "sysbatch" && ranSuccessfully(a)) {
        out.ignore.push(t);
        continue;
      }
      if (node && sdc && node.Status === "disconnected" && a.ClientStatus === "running") {
        out.disconnecting.push(t);
        continue;
      }
      if (!isTerminalAlloc(a) && (node === null || node.Status === "down")) out.lost.push(t);
      else out.ignore.push(t);
      continue;
    }
    const n = ctx.tables.nodes.get(nodeID);
    if (n && !isReadyNode(n)) {
      out.ignore.push(t);
      continue;
    }
    if (!eligible.has(nodeID)) {
      out.stop.push(t);
      continue;
    }
    if (job && job.JobModifyIndex !== a.Job?.JobModifyIndex) {
      out.update.push(t);
      continue;
    }
    out.ignore.push(t);
  }
  for (const [name, tg] of required) {
    if (existing.has(name)) continue;
    const term = terminal.get(`${nodeID}\u0000${name}`);
    if (sysbatch && term) {
      if (job && job.JobModifyIndex !== term.Job?.JobModifyIndex)
        out.update.push({ name, tg, alloc: term, nodeID });
      else out.ignore.push({ name, tg, alloc: term, nodeID });
      continue;
    }
    if (tainted.has(nodeID) || !eligible.has(nodeID)) continue;
    out.place.push({ name, tg, alloc: term, nodeID });
  }
}
