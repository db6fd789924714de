import type { FastifyPluginAsync } from "fastify";
import { REGION } from "../../cluster/server-members.ts";
import { hostData } from "../../diagnostics/host-data.ts";
import { nodeRpc, sessionOrForward } from "../../rpc/client-calls.ts";
import { agentTarget, allowsDebug, forwardToServer } from "../agent-target.ts";
import { ApiError } from "../api-error.ts";
import { httpErrorOf, isNoNodeConn, queryOptions } from "../client-call-checks.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { textQuery } from "../request-schemas.ts";

/**
 * `GET /v1/agent/host`: what an agent knows of its host (OS, network,
 * resolv.conf, hosts, redacted environment, disks), for `nomad operator
 * debug`. Bare, this server's data as such; with `server_id`, a server's in
 * Nomad's HostDataResponse (`AgentID`, `HostData`); with `node_id`, that
 * client agent's, through its Agent.Host.
 */
export const agentHostPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get(
    "/v1/agent/host",
    { schema: { querystring: textQuery("node_id", "server_id", "region") } },
    async (request, reply) => {
      if (!allowsDebug(ctx, request, "agent:read")) throw ApiError.forbidden();
      const query = request.query as { node_id?: string; server_id?: string };
      const target = agentTarget(ctx, request, query, "Can only forward to either client node or server");
      if (target.kind === "server") return forwardToServer(ctx, request, reply, target.address);
      if (target.kind === "node") {
        const args = { NodeID: target.nodeID, ServerID: "", ...queryOptions(request) };
        try {
          const session = await sessionOrForward(ctx, request, reply, target.nodeID);
          if (!session) return reply;
          return await nodeRpc(session, "Agent.Host", args);
        } catch (err) {
          throw httpErrorOf(err, isNoNodeConn);
        }
      }
      // Nomad answers its own host data bare, and through its Agent.Host RPC when a server is named.
      const data = await hostData();
      if (!query.server_id) return data;
      return { AgentID: `${ctx.config.serverName}.${REGION}`, HostData: data };
    },
  );
  refuseOtherMethods(app, "/v1/agent/host", ["GET"]);
};
