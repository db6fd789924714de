import type { FastifyPluginAsync } from "fastify";
import { nodeRpc, sessionOrForward } from "../../rpc/client-calls.ts";
import { ApiError } from "../api-error.ts";
import {
  httpErrorOf,
  isNoNodeConn,
  isUnknownNode,
  queryOptions,
  RpcFailure,
  requireNodeForRpc,
} from "../client-call-checks.ts";
import { queryText } from "../client-call-params.ts";
import type { ApiContext } from "../context.ts";
import { COMMON_READ_PARAMS, textQuery } from "../request-schemas.ts";

const statsQuery = textQuery("node_id", "namespace", ...COMMON_READ_PARAMS);

/**
 * `GET /v1/client/stats?node_id=`: a node's host statistics, from its
 * client agent (ClientStats.Stats). A server without a client of its own
 * needs the node named; node read is checked before the node is looked up,
 * and an unknown node is a 404 here (command/agent/stats_endpoint.go).
 */
export const clientStatsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get("/v1/client/stats", { schema: { querystring: statsQuery } }, async (request, reply) => {
    const nodeID = queryText(request.query, "node_id");
    if (nodeID === "") throw ApiError.badRequest("No local Node and node_id not provided");
    try {
      if (!request.identity.allows("", "node:read")) throw new RpcFailure("Permission denied");
      requireNodeForRpc(request, nodeID);
      const session = await sessionOrForward(ctx, request, reply, nodeID);
      if (!session) return reply;
      const out = await nodeRpc(session, "ClientStats.Stats", { NodeID: nodeID, ...queryOptions(request) });
      return (out as Record<string, unknown> | null)?.HostStats ?? null;
    } catch (err) {
      throw httpErrorOf(err, (m) => isNoNodeConn(m) || isUnknownNode(m));
    }
  });
};
