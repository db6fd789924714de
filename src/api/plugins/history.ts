import type { FastifyPluginAsync } from "fastify";
import { historyKey } from "../../../projections/history.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";

/**
 * Namespaced objects are read with read-job in their namespace; nodes with
 * node read and ACL objects with management, both by their route rules.
 */
// The parameter keeps the name the object's own routes give it: the router shares one per path segment.
const ROUTES = [
  { path: "/v1/allocation/:id/history", param: "id", object: "allocation", namespaced: true },
  { path: "/v1/node/:id/history", param: "id", object: "node", namespaced: false },
  { path: "/v1/job/:id/history", param: "id", object: "job", namespaced: true },
  { path: "/v1/evaluation/:id/history", param: "id", object: "evaluation", namespaced: true },
  { path: "/v1/acl/token/:accessor/history", param: "accessor", object: "acl_token", namespaced: false },
  { path: "/v1/acl/policy/:name/history", param: "name", object: "acl_policy", namespaced: false },
  { path: "/v1/acl/role/:id/history", param: "id", object: "acl_role", namespaced: false },
  { path: "/v1/acl/auth-method/:name/history", param: "name", object: "acl_auth_method", namespaced: false },
  { path: "/v1/acl/binding-rule/:id/history", param: "id", object: "acl_binding_rule", namespaced: false },
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
          params: {
            type: "object",
            properties: { [route.param]: { type: "string", minLength: 1 } },
            required: [route.param],
          },
          querystring: { type: "object", properties: { namespace: { type: "string" } } },
        },
      },
      async (request, reply) => {
        const id = (request.params as Record<string, string>)[route.param]!;
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
        if (route.namespaced && !request.identity.allows(owner?.Namespace || namespace, "read-job")) {
          throw ApiError.forbidden();
        }
        return body;
      },
    );
  }
};
