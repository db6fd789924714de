import type { FastifyPluginAsync } from "fastify";
import type { ApiContext } from "../context.ts";

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
        return reply.type("text/plain; version=0.0.4; charset=utf-8").send(ctx.metrics.toPrometheus());
      }
      return ctx.metrics.toJSON(new Date(ctx.clock.now()));
    },
  );
};
