import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { AllocsDesiredTransitionUpdated } from "../../../streams/allocs.ts";
import { type EvaluationsUpserted, newEvaluation } from "../../../streams/evals.ts";
import { parseListQuery } from "../../query/paginator.ts";
import { queryBool } from "../../query/query-bool.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { ALL_NAMESPACES, badRequestOnQueryError, pageByCreation } from "../list-pages.ts";
import { allocStub } from "../node-views.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, LIST_PARAMS, textQuery } from "../request-schemas.ts";

const listQuery = textQuery(...LIST_PARAMS, "resources", "task_states", ...COMMON_READ_PARAMS);

/** A single allocation's read: its ID, and blocking-query parameters. */
const oneAlloc = { params: idParam, querystring: textQuery("namespace", ...COMMON_READ_PARAMS) } as const;

const stopQuery = {
  type: "object",
  properties: {
    no_shutdown_delay: { type: "string" },
    reschedule: { type: "string" },
    namespace: { type: "string" },
    region: { type: "string" },
  },
} as const;

/** `/v1/allocations` and `/v1/allocation/:id[/stop]`, as in Nomad. */
export const allocationsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const { allocs } = ctx.tables;

  app.get("/v1/allocations", { schema: { querystring: listQuery } }, async (request, reply) => {
    const { allocs } = request.view.tables;
    const q = request.query as Record<string, string | undefined>;
    const namespace = q.namespace || "default";
    const prefix = q.prefix ?? "";
    const fields = {
      resources: queryBool(q, "resources") ?? false,
      taskStates: queryBool(q, "task_states") ?? true,
    };
    const allow = (a: AllocRow) =>
      (namespace === ALL_NAMESPACES || a.Namespace === namespace) &&
      request.identity.allows(a.Namespace, "read-job");
    return blockingQuery(ctx, request, reply, ["allocs"], async () => {
      const page = await badRequestOnQueryError(() =>
        pageByCreation(allocs, { prefix, list: parseListQuery(q), allow }),
      );
      return {
        index: allocs.index,
        body: page.items.map((a) => allocStub(a, fields)),
        nextToken: page.nextToken,
      };
    });
  });

  app.get("/v1/allocation/:id", { schema: oneAlloc }, async (request, reply) => {
    const { allocs } = request.view.tables;
    const { id } = request.params as { id: string };
    const body = await blockingQuery(ctx, request, reply, ["allocs"], () => {
      const row = allocs.get(id);
      return { index: row?.ModifyIndex ?? allocs.index, body: row ?? null };
    });
    if (!body) throw ApiError.notFound("alloc not found");
    if (!request.identity.allows(body.Namespace, "read-job")) throw ApiError.forbidden();
    return body;
  });

  app.route({
    method: ["PUT", "POST"],
    url: "/v1/allocation/:id/stop",
    schema: { params: idParam, querystring: stopQuery },
    handler: async (request, reply) => {
      const { id } = request.params as { id: string };
      const query = request.query as Record<string, unknown>;
      const noShutdownDelay = queryBool(query, "no_shutdown_delay") ?? false;
      // `nomad alloc stop -reschedule`: the replacement is a reschedule of
      // this allocation (it counts against the reschedule policy), not a
      // plain migration.
      const reschedule = queryBool(query, "reschedule") ?? false;
      const alloc = allocs.get(id);
      if (!alloc) throw ApiError.notFound("allocation not found");
      if (!request.identity.allows(alloc.Namespace, "alloc-lifecycle")) throw ApiError.forbidden();
      // Nomad's Alloc.Stop: mark the allocation for migration and let the
      // scheduler stop it and place a replacement, in one write.
      const transition: AllocsDesiredTransitionUpdated = {
        Allocs: {
          [alloc.ID]: {
            Migrate: true,
            NoShutdownDelay: noShutdownDelay,
            ...(reschedule && { Reschedule: true }),
          },
        },
      };
      const now = ctx.clock.now();
      const evaluation = newEvaluation({
        ID: randomUUID(),
        Namespace: alloc.Namespace,
        Type: alloc.Job?.Type ?? "service",
        Priority: alloc.Job?.Priority ?? 50,
        TriggeredBy: "alloc-stop",
        JobID: alloc.JobID,
        JobModifyIndex: alloc.Job?.JobModifyIndex ?? 0,
        CreateTime: now * 1e6,
      });
      const evals: EvaluationsUpserted = { Evals: [evaluation] };
      const index = await commit(ctx, request.identity, [
        { type: "AllocsDesiredTransitionUpdated", v: 1, data: transition },
        { type: "EvaluationsUpserted", v: 1, data: evals },
      ]);
      reply.header("X-Nomad-Index", String(index));
      return { EvalID: evaluation.ID, Index: index };
    },
  });

  refuseOtherMethods(app, "/v1/allocation/:id/stop", ["PUT", "POST"]);
  for (const url of ["/v1/allocations", "/v1/allocation/:id"]) refuseOtherMethods(app, url, ["GET"]);
};
