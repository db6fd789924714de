import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { nodeRpc, sessionOrForward } from "../../rpc/client-calls.ts";
import { ApiError } from "../api-error.ts";
import {
  httpErrorOf,
  isNoNodeConn,
  queryOptions,
  RpcFailure,
  requireNodeForRpc,
} from "../client-call-checks.ts";
import { queryText } from "../client-call-params.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, textQuery } from "../request-schemas.ts";

const URL = "/v1/client/metadata";
const metaQuery = textQuery("node_id", "namespace", ...COMMON_READ_PARAMS);

/** structs.NodeMetaApplyRequest: a null value unsets the key. */
const applyBody = {
  type: ["object", "null"],
  properties: {
    NodeID: { type: "string" },
    Meta: { type: ["object", "null"], additionalProperties: { type: ["string", "null"] } },
  },
} as const;

/**
 * `/v1/client/metadata`: a node's dynamic metadata, read and changed by its
 * client agent (NodeMeta.Read, NodeMeta.Apply; command/agent/meta_endpoint.go).
 * The node is `?node_id=` (for an apply, else the body's NodeID); node read
 * or write is checked before the node is looked up.
 */
export const nodeMetaPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const call = async (
    request: FastifyRequest,
    reply: FastifyReply,
    nodeID: string,
    method: "NodeMeta.Read" | "NodeMeta.Apply",
    capability: string,
    args: Record<string, unknown>,
  ): Promise<unknown> => {
    if (nodeID === "") throw ApiError.badRequest("No local Node and node_id not provided");
    try {
      if (!request.identity.allows("", capability)) throw new RpcFailure("Permission denied");
      requireNodeForRpc(request, nodeID);
      const session = await sessionOrForward(ctx, request, reply, nodeID);
      if (!session) return reply;
      return await nodeRpc(session, method, { ...args, NodeID: nodeID, ...queryOptions(request) });
    } catch (err) {
      throw httpErrorOf(err, isNoNodeConn);
    }
  };

  app.get(URL, { schema: { querystring: metaQuery } }, async (request, reply) =>
    call(request, reply, queryText(request.query, "node_id"), "NodeMeta.Read", "node:read", {}),
  );

  app.post(URL, { schema: { querystring: metaQuery, body: applyBody } }, async (request, reply) => {
    if (request.body === undefined) throw ApiError.badRequest("Request body is empty");
    const body = (request.body ?? {}) as { NodeID?: string; Meta?: Record<string, string | null> | null };
    const nodeID = queryText(request.query, "node_id") || body.NodeID || "";
    return call(request, reply, nodeID, "NodeMeta.Apply", "node:write", { Meta: body.Meta ?? null });
  });
  refuseOtherMethods(app, URL, ["GET", "POST"]);
};
