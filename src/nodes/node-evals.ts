import { randomUUID } from "node:crypto";
import type { AllocRow } from "../../projections/allocs.ts";
import type { JobRow } from "../../projections/jobs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import { inNodePool } from "../../streams/node-pools.ts";
import type { NodeStatus } from "../../streams/nodes.ts";
import { inAnyDatacenter } from "../services/scheduler/ready-nodes.ts";
import type { Table } from "../store/table.ts";

/**
 * Nomad's createNodeEvals: one `node-update` evaluation per job with an
 * allocation on the node (terminal ones included), and one per `system` job
 * of the node's datacenter (`systemJobs`, see systemJobsIn), so a node that
 * joins or comes back gets its system allocations.
 *
 * NodeModifyIndex is the node's index when the change was decided: the
 * evaluation is appended in the same batch as the change, before its index
 * is known. The evaluation's own index is always after the change, so a
 * scheduler that waits for it sees the change.
 */
export function nodeUpdateEvals(
  nodeID: string,
  nodeModifyIndex: number,
  allocs: readonly AllocRow[],
  nowMs: number,
  newID: () => string,
  systemJobs: readonly SystemJobRef[] = [],
): EvaluationSpec[] {
  const seen = new Set<string>();
  const evals: EvaluationSpec[] = [];
  for (const j of systemJobs) {
    const key = `${j.Namespace}\u0000${j.ID}`;
    if (seen.has(key)) continue;
    seen.add(key);
    evals.push(
      newEvaluation({
        ID: newID(),
        Namespace: j.Namespace,
        Type: j.Type,
        Priority: j.Priority,
        TriggeredBy: "node-update",
        JobID: j.ID,
        JobModifyIndex: j.JobModifyIndex,
        NodeID: nodeID,
        NodeModifyIndex: nodeModifyIndex,
        CreateTime: nowMs * 1e6,
      }),
    );
  }
  for (const a of allocs) {
    const key = `${a.Namespace}\u0000${a.JobID}`;
    if (seen.has(key)) continue;
    seen.add(key);
    evals.push(
      newEvaluation({
        ID: newID(),
        Namespace: a.Namespace,
        Type: a.Job?.Type ?? "service",
        Priority: a.Job?.Priority ?? 50,
        TriggeredBy: "node-update",
        JobID: a.JobID,
        NodeID: nodeID,
        NodeModifyIndex: nodeModifyIndex,
        CreateTime: nowMs * 1e6,
      }),
    );
  }
  return evals;
}

/** Where a node's evaluations are found: its allocations, and the system jobs of its datacenter. */
export interface NodeEvalTables {
  readonly allocs: Table<AllocRow>;
  readonly jobs: Table<JobRow>;
}

/**
 * nodeUpdateEvals for `node` as the tables hold it now: one evaluation per
 * job with an allocation on it, and per system job of its datacenter.
 */
export function evalsForNode(
  tables: NodeEvalTables,
  node: Pick<NodeRow, "ID" | "ModifyIndex" | "Datacenter"> & { readonly NodePool?: string },
  nowMs: number,
  newID: () => string = randomUUID,
): EvaluationSpec[] {
  return nodeUpdateEvals(
    node.ID,
    node.ModifyIndex,
    tables.allocs.by("node", node.ID),
    nowMs,
    newID,
    systemJobsIn(tables.jobs, node.Datacenter, node.NodePool),
  );
}

/** The parts of a job a node-update evaluation is built from. */
export type SystemJobRef = Pick<JobRow, "ID" | "Namespace" | "Type" | "Priority" | "JobModifyIndex">;

/**
 * Nomad's JobsByScheduler("system") in the node's datacenter and node pool:
 * the running system jobs a node change concerns.
 */
export function systemJobsIn(jobs: Table<JobRow>, datacenter: string, nodePool?: string): JobRow[] {
  return jobs
    .by("type", "system")
    .filter((j) => !j.Stop && inAnyDatacenter(j.Datacenters, datacenter) && inNodePool(j.NodePool, nodePool));
}

/** Nomad's nodeStatusTransitionRequiresEval, plus its "always when down". */
export function statusChangeNeedsEvals(to: NodeStatus, from: NodeStatus): boolean {
  if (to === "down") return true;
  const initToReady = from === "initializing" && to === "ready";
  const terminalToReady = from === "down" && to === "ready";
  const disconnectedToOther = from === "disconnected" && to !== "disconnected";
  const otherToDisconnected = from !== "disconnected" && to === "disconnected";
  return initToReady || terminalToReady || disconnectedToOther || otherToDisconnected;
}
