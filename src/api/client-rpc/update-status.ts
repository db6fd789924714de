import { randomUUID } from "node:crypto";
import { goTime } from "../../../projections/go-time.ts";
import {
  NODE_STATUSES,
  type NodeEventSpec,
  type NodeStatus,
  type NodeStatusUpdated,
} from "../../../streams/nodes.ts";
import { statusAfterClientUpdate } from "../../nodes/heartbeat-status.ts";
import { nodeUpdateEvals, statusChangeNeedsEvals, systemJobsIn } from "../../nodes/node-evals.ts";
import { ApiError } from "../api-error.ts";
import { commit, type Draft } from "../commit.ts";
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

  // Only a reconnecting node needs its allocations looked at.
  const allocsOnNode = () => api.tables.allocs.by("node", node.ID);
  const next = statusAfterClientUpdate(
    node,
    body.Status as NodeStatus,
    node.Status === "initializing" ? allocsOnNode() : [],
  );

  let index = 0;
  let evalIDs: string[] = [];
  if (next !== node.Status) {
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
          allocsOnNode(),
          now,
          randomUUID,
          systemJobsIn(api.tables.jobs, node.Datacenter),
        )
      : [];
    if (evals.length > 0) drafts.push({ type: "EvaluationsUpserted", v: 1, data: { Evals: evals } });
    index = await commit(api, identity, drafts);
    evalIDs = evals.map((e) => e.ID);
  }

  let ttl = 0;
  if (next === "down") api.heartbeats.clear(node.ID);
  else ttl = api.heartbeats.reset(node.ID) ?? 0;
  return nodeUpdateResponse(api, {
    heartbeatTtlMs: ttl,
    evalIDs,
    evalCreateIndex: evalIDs.length > 0 ? index : 0,
    nodeModifyIndex: index === 0 ? 0 : index - (evalIDs.length > 0 ? 1 : 0),
    schedulingEligibility: node.SchedulingEligibility,
    index,
  });
};
