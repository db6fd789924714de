import type { FastifyPluginAsync } from "fastify";
import { historyKey } from "../../../projections/history.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";

const ROUTES = [
  { path: "/v1/allocation/:id/history", object: "allocation" },
  { path: "/v1/node/:id/history", object: "node" },
  { path: "/v1/job/:id/history", object: "job" },
  { path: "/v1/evaluation/:id/history", object: "evaluation" },
] as const;

/**
 * The audit trail of one object: every transition in log order, with its
 * index, time, field, from -> to, cause and actor. Answered from the history
 * table, which keeps transitions after the object is garbage collected.
 */
export const historyPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  for (const route of ROUTES) {
    app.get(
      route.path,
      {
        schema: {
          params: { type: "object", properties: { id: { type: "string", minLength: 1 } }, required: ["id"] },
          querystring: { type: "object", properties: { namespace: { type: "string" } } },
        },
      },
      async (request, reply) => {
        const { id } = request.params as { id: string };
        const { namespace = "default" } = request.query as { namespace?: string };
        const { history } = request.view.tables;
        const body = await blockingQuery(ctx, request, reply, ["history"], () => {
          const row = history.get(historyKey(route.object, id));
          // Job IDs are unique per namespace only.
          const found = row && (route.object !== "job" || row.Namespace === namespace) ? row : undefined;
          return { index: found?.ModifyIndex ?? history.index, body: found?.Entries ?? [] };
        });
        if (body.length === 0) throw ApiError.notFound(`no history for ${route.object} ${id}`);
        const owner = request.view.tables.history.get(historyKey(route.object, id));
        if (!request.identity.allows(owner?.Namespace || namespace, "read-job")) throw ApiError.forbidden();
        return body;
      },
    );
  }
};
