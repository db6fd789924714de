import type { AllocRow } from "../../projections/allocs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { isTerminalAlloc } from "../../streams/allocs.ts";
import type { NodeStatus } from "../../streams/nodes.ts";

/**
 * The status a client's Node.UpdateStatus leads to: Nomad's strict reconnect
 * steps (PR 15808). A disconnected node asking for `ready` is parked in
 * `initializing`; an initializing node becomes `ready` only once it has no
 * live allocations or has reported them since it last missed a heartbeat.
 */
export function statusAfterClientUpdate(
  node: Pick<NodeRow, "Status" | "LastAllocUpdateIndex" | "LastMissedHeartbeatIndex">,
  requested: NodeStatus,
  allocsOnNode: readonly AllocRow[],
): NodeStatus {
  if (requested !== "ready") return requested;
  if (node.Status === "disconnected") return "initializing";
  if (node.Status === "initializing") {
    const allocsUpdated = node.LastAllocUpdateIndex > node.LastMissedHeartbeatIndex;
    const live = allocsOnNode.some((a) => !isTerminalAlloc(a));
    return live && !allocsUpdated ? "initializing" : "ready";
  }
  return "ready";
}
