import type { FastifyReply, FastifyRequest } from "fastify";
import { clusterServers, memberName } from "../cluster/server-members.ts";
import { ApiError } from "./api-error.ts";
import { rpcSupportProblem } from "./client-call-checks.ts";
import type { ApiContext } from "./context.ts";
import { FORWARDED_HEADER } from "./forward-to-leader.ts";
import { proxiedRequest, relay, sendToServer } from "./proxy-to-server.ts";

/** The agent an agent endpoint's `node_id` or `server_id` names. */
export type AgentTarget =
  | { readonly kind: "local" }
  | { readonly kind: "node"; readonly nodeID: string }
  | { readonly kind: "server"; readonly address: string };

type Ctx = Pick<ApiContext, "leadership" | "config">;

/**
 * Which agent answers `/v1/agent/pprof` and `/v1/agent/host`: a client
 * node's agent (node_id), another server (server_id: its member name, its
 * ID, or `leader`), or this server; Nomad's forwardFor and getServer, whose
 * errors are its: an unknown server is "unknown Nomad server <id>" (500),
 * naming both is a 400 with the route's own text (`both`).
 */
export function agentTarget(
  ctx: Ctx,
  request: FastifyRequest,
  query: { readonly node_id?: string; readonly server_id?: string },
  both: string,
): AgentTarget {
  const nodeID = query.node_id ?? "";
  const serverID = query.server_id ?? "";
  if (nodeID !== "" && serverID !== "") throw ApiError.badRequest(both);
  if (nodeID !== "") return { kind: "node", nodeID: nodeTarget(request, nodeID) };
  return serverTarget(ctx, request, serverID);
}

/** The server `server_id` names (Nomad's forwardFor): this one when empty. */
export function serverTarget(
  ctx: Ctx,
  request: FastifyRequest,
  serverID: string,
): Exclude<AgentTarget, { kind: "node" }> {
  if (serverID === "") return { kind: "local" };
  const servers = clusterServers(ctx.leadership, ctx.config.serverName);
  const target =
    serverID === "leader"
      ? servers.find((s) => s.leader)
      : servers.find((s) => memberName(s) === serverID || s.name === serverID);
  if (!target) {
    throw new ApiError(500, serverID === "leader" ? "No cluster leader" : `unknown Nomad server ${serverID}`);
  }
  if (target.self || target.name === ctx.config.serverName) return { kind: "local" };
  // A forwarded request names this server or is refused: it hops once.
  if (request.headers[FORWARDED_HEADER] !== undefined || target.address === "") {
    throw new ApiError(500, `no path to Nomad server ${serverID}`);
  }
  return { kind: "server", address: target.address };
}

/** Nomad's findClientConn checks on the node: unknown is a 404, an agent too old for RPC a 400. */
function nodeTarget(request: FastifyRequest, nodeID: string): string {
  const node = request.view.tables.nodes.get(nodeID);
  if (!node) throw ApiError.notFound(`Unknown node ${JSON.stringify(nodeID)}`);
  const problem = rpcSupportProblem(node.Attributes["nomad.version"]);
  if (problem) throw ApiError.badRequest(problem);
  return nodeID;
}

/** Nomad's forwardServer over chronomad's HTTP: the request as it came, answered by that server. */
export async function forwardToServer(
  ctx: Ctx,
  request: FastifyRequest,
  reply: FastifyReply,
  address: string,
): Promise<FastifyReply> {
  const out = proxiedRequest(request, FORWARDED_HEADER, ctx.config.serverName);
  let response: Awaited<ReturnType<typeof sendToServer>>;
  try {
    response = await sendToServer(address, out, reply.raw);
  } catch (err) {
    throw new ApiError(500, `failed querying server "${address}": ${(err as Error).message}`);
  }
  return relay(reply, response);
}

/**
 * Whether the caller may use this agent's debugging endpoints (host data,
 * runtime profiles): with ACLs, by its token's agent capability; without,
 * only if the server was started with enable_debug, as Nomad's.
 */
export function allowsDebug(
  ctx: Ctx,
  request: FastifyRequest,
  capability: "agent:read" | "agent:write",
): boolean {
  return ctx.config.aclEnabled ? request.identity.allows("", capability) : ctx.config.enableDebug;
}
