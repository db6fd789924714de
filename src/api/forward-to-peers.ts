import type { IncomingMessage } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { clusterServers } from "../cluster/server-members.ts";
import { ApiError } from "./api-error.ts";
import type { ApiContext } from "./context.ts";
import { FORWARDED_HEADER } from "./forward-to-leader.ts";
import { proxiedRequest, relay, sendToServer } from "./proxy-to-server.ts";

/** Nomad's ErrNoNodeConn: no server holds a connection to the node. */
export const NO_NODE_PATH = "No path to node";

/**
 * Set on the 404 of a server that was asked by a peer and holds no session
 * to the node, so the peer tries the next server; any other answer (an
 * error of the client agent's included) is the answer.
 */
export const NO_NODE_PATH_HEADER = "x-chronomad-no-node-path";

/**
 * Nomad's serverWithNodeConn for chronomad's servers, which meet over HTTP:
 * a request for a client agent connected to another server is sent to the
 * other servers in turn, and the first that holds a session to the node
 * answers it (status, headers and body relayed as they stream in). A
 * request that was itself forwarded is answered here with the marked 404,
 * so a request hops at most once. When no server has the node: Nomad's 404
 * "No path to node", or, if some server could not be asked, a 500 naming
 * each failure as Nomad's multierror does.
 */
export async function forwardToPeers(
  ctx: Pick<ApiContext, "leadership" | "config">,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (request.headers[FORWARDED_HEADER] !== undefined) return answerNoNodePath(reply);
  const self = ctx.config.serverName;
  const peers = clusterServers(ctx.leadership, self).filter(
    (m) => !m.self && m.name !== self && m.address !== "",
  );
  const out = proxiedRequest(request, FORWARDED_HEADER, self);
  const failures: string[] = [];
  for (const peer of peers) {
    let response: IncomingMessage;
    try {
      response = await sendToServer(peer.address, out, reply.raw);
    } catch (err) {
      failures.push(`failed querying server "${peer.address}": ${(err as Error).message}`);
      continue;
    }
    if (response.headers[NO_NODE_PATH_HEADER] !== undefined) {
      response.resume();
      continue;
    }
    return relay(reply, response);
  }
  if (failures.length > 0) throw new ApiError(500, multiError(failures));
  throw ApiError.notFound(NO_NODE_PATH);
}

/** The marked 404 of a server without a session to the node. */
export function answerNoNodePath(reply: FastifyReply): FastifyReply {
  return reply
    .status(404)
    .header(NO_NODE_PATH_HEADER, "1")
    .type("text/plain; charset=utf-8")
    .send(NO_NODE_PATH);
}

/** go-multierror's text, which Nomad's HTTP layer answers as it is. */
export function multiError(errors: readonly string[]): string {
  const points = errors.map((e) => `* ${e}`).join("\n\t");
  const head = errors.length === 1 ? "1 error occurred:" : `${errors.length} errors occurred:`;
  return `${head}\n\t${points}\n\n`;
}
