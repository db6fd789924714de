import type { FastifyPluginAsync } from "fastify";
import {
  clusterServers,
  DATACENTER,
  hostPort,
  memberName,
  REGION,
  serfMember,
} from "../../cluster/server-members.ts";
import type { ServerMember } from "../../leadership.ts";
import { agentSelf } from "../agent-self.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { textQuery } from "../request-schemas.ts";

/** Why gossip operations have no effect here, said once for join and force-leave. */
const LOG_MEMBERSHIP =
  "chronomad servers are members of the cluster by consuming its shared log " +
  "(servers on one Kafka log elect a leader beside it), not by gossip";

/**
 * The agent endpoints of a Nomad server: health, self, and the server
 * members. Membership is the log's election, so join succeeds only for
 * servers already in it and force-leave refuses to act on a live one.
 */
export const agentPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  // Also whether this server has applied everything its log held when asked:
  // a server still replaying serves stale reads and says so with 500, as
  // Nomad does when a server is unhealthy.
  app.get("/v1/agent/health", async (_request, reply) => {
    const lag = ctx.store.log.lastIndex() - ctx.store.appliedIndex;
    const leader = ctx.leadership.leaderAddress();
    const ok = leader !== "" && lag <= 0;
    const message = !leader
      ? "No cluster leader"
      : lag > 0
        ? `applying the log: ${lag} records behind`
        : "ok";
    return reply.status(ok ? 200 : 500).send({ server: { ok, message } });
  });

  app.get("/v1/agent/self", async (request) => {
    if (!request.identity.allows("", "agent:read")) throw ApiError.forbidden();
    const self = agentSelf(ctx);
    // chronomad's own: a forensic server (serve --read-only) says so where its settings are read.
    (self.config as Record<string, unknown>).ReadOnly = ctx.config.readOnly;
    return self;
  });
  refuseOtherMethods(app, "/v1/agent/self", ["GET"]);

  app.get("/v1/agent/members", { schema: { querystring: textQuery("region", "stale") } }, async (request) => {
    if (!request.identity.allows("", "node:read")) throw ApiError.forbidden();
    const servers = clusterServers(ctx.leadership, ctx.config.serverName);
    return {
      ServerName: ctx.config.serverName,
      ServerRegion: REGION,
      ServerDC: DATACENTER,
      Members: servers.map((s) => serfMember(s, servers.length)),
    };
  });
  refuseOtherMethods(app, "/v1/agent/members", ["GET"]);

  const joinQuery = {
    type: "object",
    properties: { address: { type: "array", items: { type: "string" } } },
  } as const;
  app.route({
    method: ["PUT", "POST"],
    url: "/v1/agent/join",
    schema: { querystring: joinQuery },
    // Nomad 1.6.1 checks no ACL here (its route rule is public): a join names servers, and
    // succeeds only for those already in this cluster's log.
    handler: async (request) => {
      const addresses = ((request.query as { address?: string[] }).address ?? []).filter((a) => a !== "");
      if (addresses.length === 0) throw ApiError.badRequest("missing address to join");
      const servers = clusterServers(ctx.leadership, ctx.config.serverName);
      const unknown = addresses.filter((a) => !servers.some((s) => joins(s, a)));
      if (unknown.length > 0) {
        throw ApiError.badRequest(
          `cannot join ${unknown.join(", ")}: not a server of this cluster, and ${LOG_MEMBERSHIP}; ` +
            "start a server with --log set to this cluster's log to add it",
        );
      }
      // Every address names a server already in the cluster: joined, as serf
      // counts a join to a node it already knows.
      return { num_joined: addresses.length, error: "" };
    },
  });
  refuseOtherMethods(app, "/v1/agent/join", ["PUT", "POST"]);

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/agent/force-leave",
    schema: { querystring: textQuery("node", "prune") },
    handler: async (request, reply) => {
      if (!request.identity.allows("", "agent:write")) throw ApiError.forbidden();
      const node = (request.query as { node?: string }).node ?? "";
      if (node === "") throw ApiError.badRequest("missing node to force leave");
      const servers = clusterServers(ctx.leadership, ctx.config.serverName);
      const member = servers.find((s) => memberName(s) === node || s.name === node);
      // As serf: forcing out a node it does not know is no error.
      if (!member) return reply.send();
      throw ApiError.badRequest(
        `cannot force ${node} to leave: ${LOG_MEMBERSHIP}; a server leaves when it stops ` +
          `(a crashed one drops out of the election after leader_session_timeout)`,
      );
    },
  });
  refuseOtherMethods(app, "/v1/agent/force-leave", ["PUT", "POST"]);
};

/** Whether a join address (host:port, host, or member name) names this server. */
function joins(server: ServerMember, address: string): boolean {
  if (address === server.address || address === server.name || address === memberName(server)) return true;
  const { host } = hostPort(server.address);
  return address === host;
}
