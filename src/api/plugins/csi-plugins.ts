import type { FastifyPluginAsync } from "fastify";
import type { CSIPluginRow } from "../../../projections/csi-plugins.ts";
import { pluginStub, pluginView } from "../../csi/csi-views.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, textQuery } from "../request-schemas.ts";

const TABLE = "csi_plugins";
const listQuery = textQuery("type", "prefix", ...COMMON_READ_PARAMS);
const readQuery = textQuery("type", ...COMMON_READ_PARAMS);

/**
 * Nomad's CSI plugin endpoints (command/agent/csi_endpoint.go): the plugins
 * the clients fingerprint (projections/csi-plugins.ts). plugin list / plugin
 * read are checked by the route rules.
 */
export const csiPluginsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get("/v1/plugins", { schema: { querystring: listQuery } }, async (request, reply) => {
    const q = request.query as Record<string, string | undefined>;
    const { csiPlugins } = request.view.tables;
    // Nomad: no type is an empty list, any other type than csi is null.
    if (q.type === undefined || q.type === "")
      return blockingQuery(ctx, request, reply, [TABLE], () => ({ index: 1, body: [] }));
    if (q.type !== "csi")
      return blockingQuery(ctx, request, reply, [TABLE], () => ({ index: 1, body: null }));
    if (!request.identity.allows("", "plugin:list")) throw ApiError.forbidden();
    const prefix = q.prefix ?? "";
    return blockingQuery(ctx, request, reply, [TABLE], () => ({
      index: Math.max(1, csiPlugins.index),
      body: [...csiPlugins.withPrefix(prefix)].map(pluginStub),
    }));
  });
  refuseOtherMethods(app, "/v1/plugins", ["GET"]);

  app.get(
    "/v1/plugin/csi/:id",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const { csiPlugins, allocs } = request.view.tables;
      const row = await blockingQuery<CSIPluginRow | undefined>(
        ctx,
        request,
        reply,
        [TABLE, "allocs"],
        () => {
          const p = csiPlugins.get(id);
          return { index: Math.max(1, p?.ModifyIndex ?? csiPlugins.index), body: p };
        },
      );
      if (!row) throw ApiError.notFound("plugin not found");
      return pluginView(row, allocs);
    },
  );
  refuseOtherMethods(app, "/v1/plugin/csi/:id", ["GET"]);
};
