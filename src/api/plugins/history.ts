import type { FastifyPluginAsync } from "fastify";
import { historyKey } from "../../../projections/history.ts";
import { parseListQuery } from "../../query/paginator.ts";
import { QueryError } from "../../query/query-error.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { pageOfEntries, parseEntryToken } from "../history-pages.ts";
import { badRequestOnQueryError } from "../list-pages.ts";
import { COMMON_READ_PARAMS, textQuery } from "../request-schemas.ts";

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
  { path: "/v1/volume/csi/:id/history", param: "id", object: "csi_volume", namespaced: true },
  { path: "/v1/acl/token/:accessor/history", param: "accessor", object: "acl_token", namespaced: false },
  { path: "/v1/acl/policy/:name/history", param: "name", object: "acl_policy", namespaced: false },
  { path: "/v1/acl/role/:id/history", param: "id", object: "acl_role", namespaced: false },
  { path: "/v1/acl/auth-method/:name/history", param: "name", object: "acl_auth_method", namespaced: false },
  { path: "/v1/acl/binding-rule/:id/history", param: "id", object: "acl_binding_rule", namespaced: false },
] as const;

/** A volume's history is read as the volume is (CSIVolume.Get). */
const VOLUME_READ = ["csi-read-volume", "csi-mount-volume", "read-job"];

const historyQuery = textQuery(
  "namespace",
  "filter",
  "per_page",
  "next_token",
  "reverse",
  ...COMMON_READ_PARAMS,
);

/**
 * The audit trail of one object: every transition in log order, with its
 * index, time, field, from -> to, cause and actor. Answered from the history
 * store on disk (src/history/), which keeps transitions after the object is
 * garbage collected; the history table says which objects have one.
 *
 * Listed as Nomad lists: `per_page` and `next_token` page through the
 * entries in (Index, position within the index) order, `X-Nomad-NextToken`
 * names the first entry of the next page as `<Index>.<n>`, `reverse=true`
 * starts from the newest, and `filter` is a bexpr expression over an entry's
 * fields (Index, Time, Field, From, To, Cause.*, Actor.*). As in Nomad's
 * lists, an expression that cannot be evaluated on an entry fails the page:
 * From and To hold a string on one entry and an object on the next (the
 * `(created)` entry's first values), so compare them after the Field, as in
 * `Field == "ClientStatus" and To == "failed"`. With `?at_index=N`, the
 * entries up to index N.
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
          querystring: historyQuery,
        },
      },
      async (request, reply) => {
        const id = (request.params as Record<string, string>)[route.param]!;
        const query = request.query as Record<string, unknown>;
        const namespace =
          typeof query.namespace === "string" && query.namespace !== "" ? query.namespace : "default";
        // Every parameter is checked before anything is read or waited for.
        const list = badRequestOnQueryError(() => {
          const parsed = parseListQuery(query);
          if (parsed.nextToken !== "" && parseEntryToken(parsed.nextToken) === undefined) {
            throw new QueryError(
              `next_token must be <Index>.<n> as X-Nomad-NextToken gives it, or an index, got ${JSON.stringify(parsed.nextToken)}`,
            );
          }
          return parsed;
        });
        const { history } = request.view.tables;
        const found = await blockingQuery(ctx, request, reply, ["history"], () => {
          const row = history.get(historyKey(route.object, id, namespace));
          return { index: row?.ModifyIndex ?? history.index, body: row };
        });
        if (found === undefined || found.Count === 0) {
          throw ApiError.notFound(`no history for ${route.object} ${id}`);
        }
        const caps = route.object === "csi_volume" ? VOLUME_READ : ["read-job"];
        if (route.namespaced && !caps.some((c) => request.identity.allows(found.Namespace || namespace, c))) {
          throw ApiError.forbidden();
        }
        // The entries are on disk; as of a past index, those up to it (the row says the object had some then).
        // The newest page alone (a reverse page without token or filter) reads only the newest chunks.
        const newestPage =
          list.reverse && list.perPage > 0 && list.nextToken === "" && list.filter === undefined;
        const entries = newestPage
          ? ctx.history.newest(found.Key, list.perPage + 1, request.view.atIndex)
          : await ctx.history.entriesInSlices(found.Key, request.view.atIndex);
        const page = await badRequestOnQueryError(() => pageOfEntries(entries, list));
        if (page.nextToken !== "") reply.header("X-Nomad-NextToken", page.nextToken);
        return page.items;
      },
    );
  }
};
