import type { FastifyPluginAsync } from "fastify";
import { currentLeadership } from "../../../projections/leadership.ts";
import { clusterServers, memberName, RAFT_PROTOCOL } from "../../cluster/server-members.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { textQuery } from "../request-schemas.ts";

/**
 * `/v1/operator/raft/*`. chronomad has no Raft: its servers share one log
 * and elect a leader beside it. The configuration is answered from that
 * election, in Nomad's shape: each server is a voter (any of them can
 * lead), its ID is its server name, and the index is the log index at which
 * the current leader established itself. Removing a peer has no meaning and
 * is refused.
 */
export const operatorRaftPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const configuration = "/v1/operator/raft/configuration";
  app.get(configuration, { schema: { querystring: textQuery("region", "stale") } }, async (request) => {
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    const servers = clusterServers(ctx.leadership, ctx.config.serverName);
    return {
      Servers: servers.map((s) => ({
        ID: s.name,
        Node: memberName(s),
        Address: s.address,
        Leader: s.leader,
        Voter: true,
        RaftProtocol: RAFT_PROTOCOL,
      })),
      Index: currentLeadership(ctx.tables.leadership)?.CreateIndex ?? 0,
    };
  });
  refuseOtherMethods(app, configuration, ["GET"]);

  const peer = "/v1/operator/raft/peer";
  app.delete(peer, { schema: { querystring: textQuery("id", "address", "region") } }, async (request) => {
    const query = request.query as { id?: string; address?: string };
    const hasID = query.id !== undefined;
    const hasAddress = query.address !== undefined;
    if (!hasID && !hasAddress) {
      throw ApiError.badRequest(
        "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove",
      );
    }
    if (hasID && hasAddress) throw ApiError.badRequest("Must specify only one of ?id or ?address");
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    const servers = clusterServers(ctx.leadership, ctx.config.serverName);
    const server = hasID
      ? servers.find((s) => s.name === query.id)
      : servers.find((s) => s.address === query.address);
    // Nomad's texts for a peer it does not have (it answers them 500; a
    // caller's mistake is a 400 here).
    if (!server && hasID)
      throw ApiError.badRequest(`id ${JSON.stringify(query.id)} was not found in the Raft configuration`);
    if (!server) {
      throw ApiError.badRequest(
        `address ${JSON.stringify(query.address)} was not found in the Raft configuration`,
      );
    }
    throw ApiError.badRequest(
      `cannot remove ${server.name}: chronomad servers are not Raft peers; each consumes the shared log and ` +
        "takes part in the leader election while it runs, so a server is removed by stopping it",
    );
  });
  // Nomad answers any other method on the peer path 404.
};
