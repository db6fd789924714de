import type { NodeDeregistered, NodeEventSpec, NodeEventsAppended } from "../../../streams/nodes.ts";
import { evalsForNode } from "../../nodes/node-evals.ts";
import { ApiError } from "../api-error.ts";
import { commit, type Draft } from "../commit.ts";
import { nodeUpdateResponse } from "../node-responses.ts";
import { authenticateNode, presentedNodeSecret } from "./node-auth.ts";
import { nodeEventFrom, type RpcHandler } from "./rpc-context.ts";
import type { DeregisterBody, EmitEventsBody } from "./schemas.ts";

/** Node.Deregister: the node leaves; jobs with allocations there are re-evaluated. */
export const deregister: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as DeregisterBody;
  if (!body.NodeID) throw ApiError.badRequest("missing node ID for client deregistration");
  const { node, identity } = authenticateNode(api, body.NodeID, presentedNodeSecret(request, body.AuthToken));
  const data: NodeDeregistered = { NodeIDs: [node.ID] };
  const evals = evalsForNode(api.tables, node, api.clock.now());
  const drafts: Draft[] = [{ type: "NodeDeregistered", v: 1, data }];
  if (evals.length > 0) drafts.push({ type: "EvaluationsUpserted", v: 1, data: { Evals: evals } });
  const index = await commit(api, identity, drafts);
  api.heartbeats.clear(node.ID);
  return nodeUpdateResponse(api, {
    evalIDs: evals.map((e) => e.ID),
    evalCreateIndex: evals.length > 0 ? index : 0,
    nodeModifyIndex: index - (drafts.length - 1),
    index,
  });
};

/** Node.EmitEvents: a node appends events about itself (and only itself). */
export const emitEvents: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as EmitEventsBody;
  const byNode = body.NodeEvents ?? {};
  const ids = Object.keys(byNode);
  if (ids.length !== 1)
    throw ApiError.badRequest("NodeEvents must hold the events of exactly one node, the caller");
  const nodeID = ids[0]!;
  const { identity } = authenticateNode(api, nodeID, presentedNodeSecret(request, body.AuthToken));
  const now = api.clock.now();
  const events: NodeEventSpec[] = (byNode[nodeID] ?? []).map((e) => nodeEventFrom(e, now));
  if (events.length === 0) throw ApiError.badRequest("no node events to emit");
  const data: NodeEventsAppended = { Events: { [nodeID]: events } };
  const index = await commit(api, identity, [{ type: "NodeEventsAppended", v: 1, data }]);
  return { Index: index };
};
