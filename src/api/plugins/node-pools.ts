import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { jobKey } from "../../../projections/evals.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import { isBuiltInNodePool, nodePoolDeleteRefusal } from "../../../projections/node-pools.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { NODE_POOL_ALL, type NodePoolDeleted, type NodePoolUpserted } from "../../../streams/node-pools.ts";
import {
  compareCodePoints,
  idTokenizer,
  namespaceIdTokenizer,
  paginateInSlices,
  parseListQuery,
  type Tokenizer,
} from "../../query/paginator.ts";
import { queryBool } from "../../query/query-bool.ts";
import { QueryError } from "../../query/query-error.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { jobStub } from "../job-views.ts";
import { ALL_NAMESPACES, badRequestOnQueryError } from "../list-pages.ts";
import { type NodePoolBody, nodePoolBodySchema, nodePoolFromBody } from "../node-pool-body.ts";
import { nodeStub } from "../node-views.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, LIST_PARAMS, nameParam, textQuery } from "../request-schemas.ts";

const listQuery = textQuery(...LIST_PARAMS, ...COMMON_READ_PARAMS);
const nodesQuery = textQuery(...LIST_PARAMS, "resources", "os", ...COMMON_READ_PARAMS);
const jobsQuery = textQuery(...LIST_PARAMS, "meta", ...COMMON_READ_PARAMS);
const readQuery = textQuery(...COMMON_READ_PARAMS);

/** Nomad pages node pools by name (its StructsTokenizer WithID reads the pool's GetID, the name). */
const nameTokenizer: Tokenizer<{ readonly Name: string }, string> = {
  token: (row) => row.Name,
  parse: (token) => token,
  compare: (row, key) => compareCodePoints(row.Name, key),
};

type Query = Record<string, string | undefined>;

/**
 * `/v1/node/pools` and `/v1/node/pool/:name[/nodes|/jobs]`, as in Nomad 1.6.
 * The static `pool`/`pools` segments take precedence over the nodes
 * plugin's `/v1/node/:id` routes.
 */
export const nodePoolsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  /** Nomad's AllowNodePoolOperation on the pool the request names (the path's, else the body's). */
  const poolOf = (request: FastifyRequest) =>
    (request.params as { name?: string }).name ?? (request.body as NodePoolBody | undefined)?.Name ?? "";
  const canRead = (request: FastifyRequest) => {
    if (!request.identity.allows(poolOf(request), "node_pool:read")) throw ApiError.forbidden();
  };
  const canWrite = (request: FastifyRequest, capability: "write" | "delete") => {
    if (!request.identity.allows(poolOf(request), `node_pool:${capability}`)) throw ApiError.forbidden();
  };

  app.get("/v1/node/pools", { schema: { querystring: listQuery } }, async (request, reply) => {
    const q = request.query as Query;
    const { nodePools } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["node_pools"], async () => {
      const page = await badRequestOnQueryError(() => {
        const list = parseListQuery(q);
        // Nomad's NodePool.List keeps the pools the caller may read.
        const rows = [...nodePools.withPrefix(q.prefix ?? "")].filter((p) =>
          request.identity.allows(p.Name, "node_pool:read"),
        );
        if (list.reverse) rows.reverse();
        return paginateInSlices(rows, { ...list, tokenizer: nameTokenizer });
      });
      return { index: Math.max(1, nodePools.index), body: page.items, nextToken: page.nextToken };
    });
  });

  app.get(
    "/v1/node/pool/:name",
    { schema: { params: nameParam, querystring: readQuery } },
    async (request, reply) => {
      canRead(request);
      const { name } = request.params as { name: string };
      const { nodePools } = request.view.tables;
      const body = await blockingQuery(ctx, request, reply, ["node_pools"], () => {
        const row = nodePools.get(name);
        return { index: row?.ModifyIndex ?? Math.max(1, nodePools.index), body: row ?? null };
      });
      if (!body) throw ApiError.notFound("node pool not found");
      return body;
    },
  );

  const upsert = async (request: FastifyRequest, pathName: string | undefined) => {
    canWrite(request, "write");
    const body = (request.body ?? {}) as NodePoolBody;
    if (pathName !== undefined && (body.Name ?? "") !== pathName) {
      throw ApiError.badRequest("Node pool name does not match request path");
    }
    const pool = nodePoolFromBody(body);
    if (isBuiltInNodePool(pool.Name)) {
      throw ApiError.badRequest(`modifying node pool ${JSON.stringify(pool.Name)} is not allowed`);
    }
    const data: NodePoolUpserted = { NodePools: [pool] };
    return commit(ctx, request.identity, [{ type: "NodePoolUpserted", v: 1, data }]);
  };

  for (const [url, pathName] of [
    ["/v1/node/pools", (_: FastifyRequest) => undefined],
    ["/v1/node/pool/:name", (r: FastifyRequest) => (r.params as { name: string }).name],
  ] as const) {
    app.route({
      method: ["PUT", "POST"],
      url,
      schema: { body: nodePoolBodySchema, ...(url.includes(":name") ? { params: nameParam } : {}) },
      handler: async (request, reply) => {
        const index = await upsert(request, pathName(request));
        reply.header("X-Nomad-Index", String(index));
        return reply.send();
      },
    });
  }

  app.delete("/v1/node/pool/:name", { schema: { params: nameParam } }, async (request, reply) => {
    canWrite(request, "delete");
    const { name } = request.params as { name: string };
    if (name === "") throw ApiError.badRequest("node pool name is empty");
    const refusal = nodePoolDeleteRefusal([name], ctx.tables.nodePools, ctx.tables);
    if (refusal) throw new ApiError(refusal.code, refusal.message);
    const data: NodePoolDeleted = { Names: [name] };
    const index = await commit(ctx, request.identity, [{ type: "NodePoolDeleted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return reply.send();
  });

  app.get(
    "/v1/node/pool/:name/nodes",
    { schema: { params: nameParam, querystring: nodesQuery } },
    async (request, reply) => {
      canRead(request);
      if (!request.identity.allows("", "node:read")) throw ApiError.forbidden();
      const { name } = request.params as { name: string };
      const q = request.query as Query;
      let fields: { resources: boolean; os: boolean };
      try {
        fields = { resources: queryBool(q, "resources") ?? false, os: queryBool(q, "os") ?? false };
      } catch (err) {
        if (err instanceof QueryError)
          throw ApiError.badRequest(`Failed to parse node list fields: ${err.message}`);
        throw err;
      }
      // Ambiguous here (the pool's name or the nodes' IDs?), so Nomad refuses it.
      if (q.prefix) throw ApiError.badRequest("prefix argument not allowed");
      const { nodes, nodePools } = request.view.tables;
      return blockingQuery(ctx, request, reply, ["nodes", "node_pools"], async () => {
        const index = Math.max(1, nodes.index);
        if (!nodePools.has(name)) return { index, body: [] };
        const page = await badRequestOnQueryError(() => {
          const list = parseListQuery(q);
          const rows: NodeRow[] = name === NODE_POOL_ALL ? [...nodes.all()] : nodes.by("pool", name);
          if (list.reverse) rows.reverse();
          return paginateInSlices(rows, { ...list, tokenizer: idTokenizer });
        });
        return { index, body: page.items.map((n) => nodeStub(n, fields)), nextToken: page.nextToken };
      });
    },
  );

  app.get(
    "/v1/node/pool/:name/jobs",
    { schema: { params: nameParam, querystring: jobsQuery } },
    async (request, reply) => {
      canRead(request);
      const { name } = request.params as { name: string };
      const q = request.query as Query;
      if (q.prefix) throw ApiError.badRequest("prefix argument not allowed");
      const meta = badRequestOnQueryError(() => queryBool(q, "meta") ?? false);
      const namespace = q.namespace || "default";
      const { jobs, jobSummaries, nodePools } = request.view.tables;
      const allow = (j: JobRow) => request.identity.allows(j.Namespace, "list-jobs");
      return blockingQuery(ctx, request, reply, ["jobs", "job_summary", "node_pools"], async () => {
        const index = Math.max(jobs.index, jobSummaries.index);
        if (!nodePools.has(name)) return { index, body: [] };
        const page = await badRequestOnQueryError(() => {
          const list = parseListQuery(q);
          // Copied out first, so the sliced walk may yield while jobs change.
          const rows =
            namespace === ALL_NAMESPACES
              ? jobs.by("pool", name)
              : [...jobs.withPrefix(`${namespace}\u0000`)].filter((j) => j.NodePool === name);
          if (list.reverse) rows.reverse();
          return paginateInSlices(rows, { ...list, allow, tokenizer: namespaceIdTokenizer });
        });
        const body = page.items.map((j) => jobStub(j, jobSummaries.get(jobKey(j.Namespace, j.ID)), meta));
        return { index, body, nextToken: page.nextToken };
      });
    },
  );

  refuseOtherMethods(app, "/v1/node/pools", ["GET", "PUT", "POST"]);
  refuseOtherMethods(app, "/v1/node/pool/:name", ["GET", "PUT", "POST", "DELETE"]);
  for (const sub of ["nodes", "jobs"]) refuseOtherMethods(app, `/v1/node/pool/:name/${sub}`, ["GET"]);
};
