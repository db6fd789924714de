import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { nodeRpc, sessionOrForward } from "../../rpc/client-calls.ts";
import { ApiError } from "../api-error.ts";
import {
  allocOf,
  httpErrorOf,
  isNoNodeConn,
  isUnknownAllocation,
  queryOptions,
  RpcFailure,
  requireNodeForRpc,
} from "../client-call-checks.ts";
import { queryText } from "../client-call-params.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, textQuery } from "../request-schemas.ts";

const readQuery = textQuery("task", "namespace", ...COMMON_READ_PARAMS);
const writeQuery = textQuery("namespace", "region");
const nodeQuery = textQuery("node_id", "namespace", ...COMMON_READ_PARAMS);

const restartBody = {
  type: ["object", "null"],
  properties: { TaskName: { type: "string" }, AllTasks: { type: "boolean" } },
} as const;

const signalBody = {
  type: ["object", "null"],
  properties: {
    AllocID: { type: "string" },
    Task: { type: "string" },
    Signal: { type: "string" },
    Region: { type: "string" },
    Namespace: { type: "string" },
    AuthToken: { type: "string" },
  },
} as const;

const allocNotFound = (m: string) => isNoNodeConn(m) || isUnknownAllocation(m);

/** Nomad's answer to the client routes that need a node when the agent has no client of its own. */
const NO_LOCAL_NODE = "No local Node and node_id not provided";

/**
 * `/v1/client/allocation/:id/{stats,checks,restart,signal,gc}` and
 * `/v1/client/gc`: calls the server passes to the client agent running the
 * allocation, or to the node named (nomad/client_alloc_endpoint.go), after
 * Nomad's checks in Nomad's order: the allocation (404 "Unknown
 * allocation"), the capability in its namespace, the node.
 */
export const clientAllocationsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  /** One ClientAllocations.* call: the checks, then the agent's Allocations.* method. */
  const callForAlloc = async (
    request: FastifyRequest,
    reply: FastifyReply,
    method: string,
    capability: string,
    args: Record<string, unknown>,
  ): Promise<{ answered: true } | { answered: false; body: Record<string, unknown> | null }> => {
    const { id } = request.params as { id: string };
    try {
      const alloc = allocOf(request, id);
      if (!request.identity.allows(alloc.Namespace, capability)) throw new RpcFailure("Permission denied");
      requireNodeForRpc(request, alloc.NodeID);
      const session = await sessionOrForward(ctx, request, reply, alloc.NodeID);
      if (!session) return { answered: true };
      const out = await nodeRpc(session, method, { AllocID: id, ...args, ...queryOptions(request) });
      return { answered: false, body: isObject(out) ? out : null };
    } catch (err) {
      throw httpErrorOf(err, allocNotFound);
    }
  };

  app.get(
    "/v1/client/allocation/:id/stats",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const result = await callForAlloc(request, reply, "Allocations.Stats", "read-job", {
        Task: queryText(request.query, "task"),
      });
      return result.answered ? reply : (result.body?.Stats ?? null);
    },
  );

  app.get(
    "/v1/client/allocation/:id/checks",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const result = await callForAlloc(request, reply, "Allocations.Checks", "read-job", {});
      return result.answered ? reply : (result.body?.Results ?? null);
    },
  );

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/client/allocation/:id/restart",
    schema: { params: idParam, querystring: writeQuery, body: restartBody },
    handler: async (request, reply) => {
      // Only these two fields of the body: the path names the allocation.
      const body = (request.body ?? {}) as { TaskName?: string; AllTasks?: boolean };
      const result = await callForAlloc(request, reply, "Allocations.Restart", "alloc-lifecycle", {
        TaskName: body.TaskName ?? "",
        AllTasks: body.AllTasks ?? false,
      });
      return result.answered ? reply : genericResponse(result.body);
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/client/allocation/:id/signal",
    schema: { params: idParam, querystring: writeQuery, body: signalBody },
    handler: async (request, reply) => {
      if (request.body === undefined)
        throw ApiError.badRequest("Failed to decode body: Request body is empty");
      const body = (request.body ?? {}) as { Task?: string; Signal?: string };
      const result = await callForAlloc(request, reply, "Allocations.Signal", "alloc-lifecycle", {
        Task: body.Task ?? "",
        Signal: body.Signal ?? "",
      });
      return result.answered ? reply : genericResponse(result.body);
    },
  });
  refuseOtherMethods(app, "/v1/client/allocation/:id/signal", ["PUT", "POST"]);

  app.get(
    "/v1/client/allocation/:id/gc",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const result = await callForAlloc(request, reply, "Allocations.GarbageCollect", "submit-job", {});
      return result.answered ? reply : reply.send();
    },
  );

  app.get("/v1/client/gc", { schema: { querystring: nodeQuery } }, async (request, reply) => {
    const nodeID = queryText(request.query, "node_id");
    if (nodeID === "") throw ApiError.badRequest(NO_LOCAL_NODE);
    try {
      if (!request.identity.allows("", "node:write")) throw new RpcFailure("Permission denied");
      requireNodeForRpc(request, nodeID);
      const session = await sessionOrForward(ctx, request, reply, nodeID);
      if (!session) return reply;
      await nodeRpc(session, "Allocations.GarbageCollectAll", { NodeID: nodeID, ...queryOptions(request) });
      return reply.send();
    } catch (err) {
      throw httpErrorOf(err, isNoNodeConn);
    }
  });
};

/** structs.GenericResponse as Nomad's HTTP layer answers it. */
function genericResponse(body: Record<string, unknown> | null): { Index: number } {
  return { Index: typeof body?.Index === "number" ? body.Index : 0 };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}
