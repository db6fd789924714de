import type { FastifyPluginAsync } from "fastify";
import { queryBool } from "../../query/query-bool.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { idParam, textQuery } from "../request-schemas.ts";
import { acceptAndClose, isWebSocketRequest, websocketCloseCode } from "../websocket-refusal.ts";

const execQuery = textQuery("task", "command", "tty", "ws_handshake", "namespace", "region");

/**
 * `/v1/client/allocation/:id/exec`: Nomad's server answers it by streaming
 * to the client agent that runs the allocation. chronomad has no stream to
 * any client, so every exec fails as Nomad's fails when it cannot reach the
 * node, after the same checks in the same order: the command, an unknown
 * allocation (404 `Unknown allocation "<id>"`), then the alloc-exec
 * capability. Over a websocket the failure is the close frame Nomad sends
 * (its clients report the frame's reason); over plain HTTP, the status.
 */
export const allocExecPlugin: FastifyPluginAsync<ApiContext> = async (app) => {
  app.get(
    "/v1/client/allocation/:id/exec",
    { schema: { params: idParam, querystring: execQuery } },
    async (request, reply) => {
      const q = request.query as Record<string, string | undefined>;
      checkCommand(q.command);
      queryBool(q, "tty");
      const { id } = request.params as { id: string };
      const alloc = request.view.tables.allocs.get(id);
      let failure: ApiError;
      if (!alloc) failure = ApiError.notFound(`Unknown allocation ${JSON.stringify(id)}`);
      else if (!request.identity.allows(alloc.Namespace, "alloc-exec")) failure = ApiError.forbidden();
      // Nomad's error when no server holds a connection to the allocation's node.
      else failure = ApiError.notFound("No path to node");
      if (!isWebSocketRequest(request.raw)) throw failure;
      reply.hijack();
      acceptAndClose(request.raw, request.raw.socket, websocketCloseCode(failure.status), failure.message);
    },
  );
};

/** `command` is a JSON array of strings, as Nomad's handler decodes it before anything else. */
function checkCommand(text: string | undefined): void {
  let command: unknown;
  try {
    command = JSON.parse(text ?? "");
  } catch (err) {
    throw ApiError.badRequest(`failed to marshal command into json: ${(err as Error).message}`);
  }
  if (command !== null && !(Array.isArray(command) && command.every((c) => typeof c === "string"))) {
    throw ApiError.badRequest("failed to marshal command into json: command must be an array of strings");
  }
}
