import type { FastifyPluginAsync } from "fastify";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";

/**
 * `GET /v1/metrics`: Nomad's JSON summary, or Prometheus text with
 * `?format=prometheus` (always enabled: chronomad has no telemetry switch).
 * Both are read from the one registry (src/metrics/metrics.ts).
 */
export const metricsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get(
    "/v1/metrics",
    {
      schema: {
        querystring: {
          type: "object",
          properties: { format: { type: "string", enum: ["json", "prometheus"] } },
        },
      },
    },
    async (request, reply) => {
      const { format } = request.query as { format?: string };
      if (format === "prometheus") {
        return reply.type("text/plain; version=0.0.4; charset=utf-8").send(await ctx.metrics.toPrometheus());
      }
      return ctx.metrics.toJSON(new Date(ctx.clock.now()));
    },
  );
  refuseOtherMethods(app, "/v1/metrics", ["GET"]);
};
