import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { allowsVariable } from "../../variables/variable-access.ts";
import { setReadHeaders } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, textQuery } from "../request-schemas.ts";
import { fuzzySearch } from "../search/fuzzy-search.ts";
import { prefixSearch } from "../search/prefix-search.ts";
import { type ListsVariable, searchNamespace } from "../search/search-contexts.ts";

const query = textQuery("namespace", "prefix", ...COMMON_READ_PARAMS);

/** Nomad's SearchRequest: the QueryOptions it embeds are taken from the query string, or Namespace from here. */
const prefixBody = {
  type: ["object", "null"],
  properties: {
    Prefix: { type: "string", default: "" },
    Context: { type: "string", default: "" },
    Namespace: { type: "string" },
  },
} as const;

/** Nomad's FuzzySearchRequest; Prefix is its QueryOptions.Prefix (where ID-prefix contexts are looked up). */
const fuzzyBody = {
  type: ["object", "null"],
  properties: {
    Text: { type: "string", default: "" },
    Context: { type: "string", default: "" },
    Namespace: { type: "string" },
    Prefix: { type: "string" },
  },
} as const;

type Query = Record<string, string | undefined>;

/**
 * `/v1/search` (IDs by prefix, what `nomad status <prefix>` and the CLI's
 * completion use) and `/v1/search/fuzzy` (names by substring, the UI's
 * search box), as Nomad answers them. Neither blocks: Nomad runs them with
 * fresh query options.
 */
export const searchPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const answer = <A extends { readonly index: number }>(reply: FastifyReply, result: A) => {
    const { index, ...body } = result;
    setReadHeaders(ctx, reply, index);
    // The whole RPC reply, as Nomad's handler returns it; LastContact is a Go duration (ns).
    return {
      ...body,
      Index: Math.max(1, index),
      LastContact: Math.round(ctx.leadership.lastContactMs() * 1e6),
      KnownLeader: ctx.leadership.leaderAddress() !== "",
      NextToken: "",
    };
  };

  // What GET /v1/vars would show the caller: its variables rules, or a workload's own paths.
  const listsVariable =
    (request: FastifyRequest): ListsVariable =>
    (namespace, path) =>
      allowsVariable(ctx.config.aclEnabled, request.identity, namespace, path, "list", true);

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/search",
    schema: { body: prefixBody, querystring: query },
    handler: async (request, reply) => {
      const body = (request.body ?? {}) as { Prefix?: string; Context?: string; Namespace?: string };
      const q = request.query as Query;
      const result = await prefixSearch(request.view.tables, request.identity, {
        prefix: body.Prefix ?? "",
        context: body.Context ?? "",
        namespace: searchNamespace(q.namespace, body.Namespace),
        listsVariable: listsVariable(request),
      });
      return answer(reply, result);
    },
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/search/fuzzy",
    schema: { body: fuzzyBody, querystring: query },
    handler: async (request, reply) => {
      const body = (request.body ?? {}) as {
        Text?: string;
        Context?: string;
        Namespace?: string;
        Prefix?: string;
      };
      const q = request.query as Query;
      const result = await fuzzySearch(request.view.tables, request.identity, {
        text: body.Text ?? "",
        context: body.Context ?? "",
        namespace: searchNamespace(q.namespace, body.Namespace),
        prefix: q.prefix || body.Prefix || "",
        listsVariable: listsVariable(request),
      });
      return answer(reply, result);
    },
  });

  for (const url of ["/v1/search", "/v1/search/fuzzy"]) refuseOtherMethods(app, url, ["PUT", "POST"]);
};
