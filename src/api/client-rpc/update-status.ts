import { randomUUID } from "node:crypto";
import { goTime } from "../../../projections/go-time.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import {
  NODE_STATUSES,
  type NodeEventSpec,
  type NodeStatus,
  type NodeStatusUpdated,
} from "../../../streams/nodes.ts";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { statusAfterClientUpdate } from "../../nodes/heartbeat-status.ts";
import { nodeUpdateEvals, statusChangeNeedsEvals, systemJobsIn } from "../../nodes/node-evals.ts";
import { ApiError } from "../api-error.ts";
import { commit, type Draft } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { nodeUpdateResponse } from "../node-responses.ts";
import { authenticateNode, presentedNodeSecret } from "./node-auth.ts";
import { nodeEventFrom, notLeader, type RpcHandler } from "./rpc-context.ts";
import type { UpdateStatusBody } from "./schemas.ts";

/**
 * Node.UpdateStatus, the client's heartbeat. A heartbeat that does not
 * change the status writes nothing: it only moves the node's deadline. A
 * status change is written with the status it was decided from, and the
 * node-update evaluations it needs, in one append.
 */
export const updateStatus: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as UpdateStatusBody;
  if (!body.NodeID) throw ApiError.badRequest("missing node ID for client status update");
  if (!body.Status || !NODE_STATUSES.includes(body.Status as NodeStatus)) {
    throw ApiError.badRequest("invalid status for node");
  }
  const { node, identity } = authenticateNode(api, body.NodeID, presentedNodeSecret(request, body.AuthToken));
  if (!api.heartbeats.active) throw notLeader();

  let written = await writeStatusChange(api, identity, node, body);
  // The write is a compare-and-set on the status it was decided from: another
  // heartbeat of the same node, or the heartbeat watcher marking it down,
  // may have changed the status since. The node is alive either way, so the
  // change is decided again from the status that won, instead of failing the
  // client's heartbeat with the 409.
  for (let attempt = 1; written === "raced" && attempt < MAX_STATUS_ATTEMPTS; attempt++) {
    const current = api.tables.nodes.get(node.ID);
    if (!current) throw ApiError.notFound("node not found");
    written = await writeStatusChange(api, identity, current, body);
  }
  if (written === "raced")
    throw ApiError.conflict(`node ${node.ID} status kept changing while a heartbeat was applied`);
  const { next, index, evalIDs } = written;

  let ttl = 0;
  if (next === "down") api.heartbeats.clear(node.ID);
  else ttl = api.heartbeats.reset(node.ID) ?? 0;
  return nodeUpdateResponse(api, {
    heartbeatTtlMs: ttl,
    evalIDs,
    evalCreateIndex: evalIDs.length > 0 ? index : 0,
    nodeModifyIndex: index === 0 ? 0 : index - (evalIDs.length > 0 ? 1 : 0),
    schedulingEligibility: api.tables.nodes.get(node.ID)?.SchedulingEligibility ?? node.SchedulingEligibility,
    index,
  });
};

const MAX_STATUS_ATTEMPTS = 3;

interface StatusWrite {
  readonly next: NodeStatus;
  readonly index: number;
  readonly evalIDs: readonly string[];
}

/**
 * Decides the node's status after this update and, if it changes, writes it
 * with the node-update evaluations it needs, in one append. "raced" when the
 * append was refused because the node's status was no longer `node.Status`.
 */
async function writeStatusChange(
  api: ApiContext,
  identity: AuthenticatedIdentity,
  node: NodeRow,
  body: UpdateStatusBody,
): Promise<StatusWrite | "raced"> {
  // Only a reconnecting node needs its allocations looked at. (No closure
  // for it: made on every heartbeat, it cost an allocation and tsx's __name.)
  const next = statusAfterClientUpdate(
    node,
    body.Status as NodeStatus,
    node.Status === "initializing" ? api.tables.allocs.by("node", node.ID) : [],
  );
  if (next === node.Status) return { next, index: 0, evalIDs: [] };
  const now = api.clock.now();
  let event: NodeEventSpec | null = body.NodeEvent ? nodeEventFrom(body.NodeEvent, now) : null;
  if (!event && node.Status === "down") {
    event = {
      Message: "Node reregistered by heartbeat",
      Subsystem: "Cluster",
      Details: null,
      Timestamp: goTime(now),
    };
  }
  const data: NodeStatusUpdated = {
    NodeID: node.ID,
    Status: next,
    PreviousStatus: node.Status,
    Cause: "heartbeat",
    NodeEvent: event,
  };
  const drafts: Draft[] = [{ type: "NodeStatusUpdated", v: 1, data }];
  const evals = statusChangeNeedsEvals(next, node.Status)
    ? nodeUpdateEvals(
        node.ID,
        node.ModifyIndex,
        api.tables.allocs.by("node", node.ID),
        now,
        randomUUID,
        systemJobsIn(api.tables.jobs, node.Datacenter, node.NodePool),
      )
    : [];
  if (evals.length > 0) drafts.push({ type: "EvaluationsUpserted", v: 1, data: { Evals: evals } });
  try {
    const index = await commit(api, identity, drafts);
    return { next, index, evalIDs: evals.map((e) => e.ID) };
  } catch (err) {
    if (
      err instanceof ApiError &&
      err.status === 409 &&
      api.tables.nodes.get(node.ID)?.Status !== node.Status
    ) {
      return "raced";
    }
    throw err;
  }
}
