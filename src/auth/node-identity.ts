import type { NodeRow } from "../../projections/nodes.ts";
import type { AuthenticatedIdentity } from "./authenticate.ts";

/** A client node: it may act on itself and read allocations (it watches previous allocations elsewhere). */
export function nodeIdentity(node: Pick<NodeRow, "ID" | "Name">): AuthenticatedIdentity {
  return {
    actor: { kind: "node", id: node.ID, name: node.Name },
    allows: nodeAllows,
    label: `client:${node.ID}`,
  };
}

// One function for every node identity: a closure per call cost an allocation (and tsx's __name) per RPC.
function nodeAllows(_namespace: string, capability: string): boolean {
  return capability === "node:client" || capability === "read-job";
}
