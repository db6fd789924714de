import type { AllocRow } from "../../projections/allocs.ts";
import { type EvaluationSpec, newEvaluation } from "../../streams/evals.ts";
import type { NodeStatus } from "../../streams/nodes.ts";

/**
 * Nomad's createNodeEvals: one `node-update` evaluation per job with an
 * allocation on the node (terminal ones included). Nomad also adds every
 * `system` job of the node's datacenter; there is no jobs table yet, so that
 * part waits for it.
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
): EvaluationSpec[] {
  const seen = new Set<string>();
  const evals: EvaluationSpec[] = [];
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

/** Nomad's nodeStatusTransitionRequiresEval, plus its "always when down". */
export function statusChangeNeedsEvals(to: NodeStatus, from: NodeStatus): boolean {
  if (to === "down") return true;
  const initToReady = from === "initializing" && to === "ready";
  const terminalToReady = from === "down" && to === "ready";
  const disconnectedToOther = from === "disconnected" && to !== "disconnected";
  const otherToDisconnected = from !== "disconnected" && to === "disconnected";
  return initToReady || terminalToReady || disconnectedToOther || otherToDisconnected;
}
