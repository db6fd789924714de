import type { AllocRow } from "../../../projections/allocs.ts";
import { jobKey } from "../../../projections/evals.ts";
import type { Projections } from "../../../projections/index.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { currentSchedulerConfig } from "../../../projections/scheduler-config.ts";
import type { EvaluationSpec } from "../../../streams/evals.ts";
import { isTerminalEvalStatus } from "../../../streams/evals.ts";
import { ALLOC_LOST } from "./descriptions.ts";
import type { AllocMetric } from "./metrics.ts";
import type { Plan } from "./plan.ts";
import type { ReadyNodes } from "./ready-nodes.ts";
import type { DesiredUpdates } from "./reconciler.ts";
import { runToEnd, type Steps } from "./slices.ts";

/**
 * What a scheduler computes against: the tables as they are, the ready
 * nodes, the time, and where new IDs come from. A computation run at once
 * (scheduleGeneric, scheduleSystem) reads the tables synchronously, so they
 * cannot change under it; one run in slices (the `...Sliced` variants) may
 * see them move between slices, which the plan applier's second check covers.
 */
export interface SchedulerContext {
  readonly tables: Projections["tables"];
  readonly readyNodes: ReadyNodes;
  readonly nowMs: number;
  readonly newID: () => string;
}

/** What one pass of a scheduler decided for an evaluation. */
export interface ScheduleOutcome {
  readonly job: JobRow | undefined;
  readonly plan: Plan;
  /** Follow-up evaluations (reschedule later, disconnect timeouts), to create before the plan. */
  readonly followupEvals: readonly EvaluationSpec[];
  readonly failedTGAllocs: Record<string, AllocMetric> | null;
  readonly queuedAllocs: Record<string, number>;
  readonly deploymentID: string;
  /** Per computed class, whether the job could run there (the evaluation's ClassEligibility, in the order found). */
  readonly classEligibility: ReadonlyMap<string, boolean>;
  readonly escaped: boolean;
  readonly desiredTGUpdates: Record<string, DesiredUpdates>;
  /** Nomad's delayInstead: failures wait for the follow-ups instead of a blocked evaluation. */
  readonly delayInstead: boolean;
}

/** The cluster's scheduler algorithm, or the job's node pool's own (Nomad's SchedulerConfiguration.WithNodePool). */
export function algorithmOf(tables: Projections["tables"], nodePool?: string): "binpack" | "spread" {
  const own = nodePool
    ? tables.nodePools.get(nodePool)?.SchedulerConfiguration?.SchedulerAlgorithm
    : undefined;
  const algorithm = own || currentSchedulerConfig(tables.schedulerConfig).SchedulerAlgorithm;
  return algorithm === "spread" ? "spread" : "binpack";
}

export function jobOf(tables: Projections["tables"], namespace: string, jobID: string): JobRow | undefined {
  return tables.jobs.get(jobKey(namespace, jobID));
}

/** A job the cluster never recorded (no row, no version): its allocations are none of the scheduler's business. */
export function jobUnknown(tables: Projections["tables"], namespace: string, jobID: string): boolean {
  const key = jobKey(namespace, jobID);
  return !tables.jobs.has(key) && tables.jobVersions.countBy("job", key) === 0;
}

export function evalPendingIn(tables: Projections["tables"]): (id: string) => boolean {
  return (id) => {
    const e = tables.evals.get(id);
    return e !== undefined && !isTerminalEvalStatus(e.Status);
  };
}

/** Nomad's taintedNodes: the nodes of these allocations that are gone, down, draining or disconnected. */
export function taintedNodes(
  tables: Projections["tables"],
  allocs: readonly AllocRow[],
): Map<string, NodeRow | null> {
  return runToEnd(taintedNodesSteps(tables, allocs));
}

/** Allocations looked at between two pause points of {@link taintedNodesSteps}. */
const ALLOCS_PER_STEP = 1_000;

/** {@link taintedNodes} with a pause point every thousand allocations. */
export function* taintedNodesSteps(
  tables: Projections["tables"],
  allocs: readonly AllocRow[],
): Steps<Map<string, NodeRow | null>> {
  const out = new Map<string, NodeRow | null>();
  // Most nodes run several allocations of a large job and are not tainted: each is looked up once.
  const fine = new Set<string>();
  let n = 0;
  for (const a of allocs) {
    if (++n % ALLOCS_PER_STEP === 0) yield;
    if (fine.has(a.NodeID) || out.has(a.NodeID)) continue;
    const node = tables.nodes.get(a.NodeID);
    if (!node) out.set(a.NodeID, null);
    else if (node.Status === "down" || node.DrainStrategy !== null || node.Status === "disconnected")
      out.set(a.NodeID, node);
    else fine.add(a.NodeID);
  }
  return out;
}

/** Nomad's updateNonTerminalAllocsToLost: stopped allocations still running on a down node are lost. */
export function updateNonTerminalAllocsToLost(
  plan: Plan,
  tainted: ReadonlyMap<string, NodeRow | null>,
  allocs: readonly AllocRow[],
): void {
  for (const a of allocs) {
    if (!tainted.has(a.NodeID)) continue;
    const node = tainted.get(a.NodeID);
    if (node && node.Status !== "down") continue;
    if (
      (a.DesiredStatus === "stop" || a.DesiredStatus === "evict") &&
      (a.ClientStatus === "running" || a.ClientStatus === "pending")
    ) {
      plan.appendStop(a, ALLOC_LOST, "lost");
    }
  }
}

/** Penalty nodes for a replacement (Nomad's getSelectOptions): where it failed, and where its predecessors ran. */
export function penaltyNodes(prev: AllocRow | undefined): Set<string> | undefined {
  if (!prev) return undefined;
  const nodes = new Set<string>();
  if (prev.ClientStatus === "failed") nodes.add(prev.NodeID);
  for (const e of prev.RescheduleTracker?.Events ?? []) nodes.add(e.PrevNodeID);
  return nodes;
}
