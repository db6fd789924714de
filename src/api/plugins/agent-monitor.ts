import type { FastifyPluginAsync } from "fastify";
import { monitorLevel } from "../../logging/hclog-lines.ts";
import { parseGoBool } from "../../query/filter/go-strconv.ts";
import { forwardToServer, serverTarget } from "../agent-target.ts";
import { ApiError } from "../api-error.ts";
import { streamNode } from "../client-call-checks.ts";
import { streamFromNode } from "../client-stream-response.ts";
import type { ApiContext } from "../context.ts";
import { MonitorConnection } from "../monitor-connection.ts";
import { textQuery } from "../request-schemas.ts";

/**
 * `GET /v1/agent/monitor`: streams this server's own log from now on, at
 * `log_level` (default info, even below the configured level), as hclog
 * text or JSON (`log_json`), in Nomad's `{"Data": base64}` frames or as
 * plain text (`plain`). With `node_id`, the log of that node's client agent
 * instead, which the agent streams over the session it opened to a server.
 */
export const agentMonitorPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get(
    "/v1/agent/monitor",
    {
      schema: { querystring: textQuery("log_level", "log_json", "plain", "node_id", "server_id", "region") },
    },
    async (request, reply) => {
      const query = request.query as Record<string, string | undefined>;
      const levelName = query.log_level || "INFO";
      const level = monitorLevel(levelName);
      if (level === undefined) throw ApiError.badRequest(`Unknown log level: ${levelName}`);
      const json = bool(query.log_json, "Unknown option for log json");
      const plain = bool(query.plain, "Unknown option for plain");
      const nodeID = query.node_id ?? "";
      const serverID = query.server_id ?? "";
      if (nodeID !== "" && serverID !== "") {
        throw ApiError.badRequest("Cannot target node and server simultaneously");
      }
      if (!request.identity.allows("", "agent:read")) throw ApiError.forbidden();
      if (nodeID !== "") {
        // Nomad's forwardMonitorClient: the client agent's own Agent.Monitor, its frames passed on as they come.
        const args = { NodeID: nodeID, ServerID: "", LogLevel: levelName, LogJSON: json, PlainText: plain };
        const target = () => streamNode(request, nodeID);
        const contentType = plain ? "text/plain" : "application/json";
        return streamFromNode(
          ctx,
          request,
          reply,
          { target, method: "Agent.Monitor", args },
          { contentType },
        );
      }
      // Another server's log: that server streams it, and this one passes it on (Nomad's forwardMonitorServer).
      const target = serverTarget(ctx, request, serverID);
      if (target.kind === "server") return forwardToServer(ctx, request, reply, target.address);
      if (!ctx.logTap) {
        throw new ApiError(501, "this server's logger was supplied by its embedder and cannot be monitored");
      }
      reply.hijack();
      new MonitorConnection(ctx, ctx.logTap, request.raw, reply.raw, { level, json, plain });
    },
  );
};

/** A query boolean with Nomad's error text: `<prefix>: strconv.ParseBool: parsing "x": invalid syntax`. */
function bool(text: string | undefined, prefix: string): boolean {
  if (text === undefined || text === "") return false;
  const parsed = parseGoBool(text);
  if (!parsed.ok) throw ApiError.badRequest(`${prefix}: ${parsed.error}`);
  return parsed.value;
}
