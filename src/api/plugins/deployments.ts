import type { FastifyPluginAsync } from "fastify";
import type { DeploymentRow } from "../../../projections/deployments.ts";
import { parseListQuery } from "../../query/paginator.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { ALL_NAMESPACES, badRequestOnQueryError, pageByCreation } from "../list-pages.ts";
import { allocStub } from "../node-views.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, LIST_PARAMS, textQuery } from "../request-schemas.ts";

const readQuery = textQuery(...LIST_PARAMS, ...COMMON_READ_PARAMS);

/** `/v1/deployments` and `/v1/deployment/:id`, as in Nomad (reads). */
export const deploymentsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get("/v1/deployments", { schema: { querystring: readQuery } }, async (request, reply) => {
    const q = request.query as Record<string, string | undefined>;
    const namespace = q.namespace || "default";
    const prefix = q.prefix ?? "";
    const { deployments } = request.view.tables;
    const allow = (d: DeploymentRow) =>
      (namespace === ALL_NAMESPACES || d.Namespace === namespace) &&
      request.identity.allows(d.Namespace, "read-job");
    return blockingQuery(ctx, request, reply, ["deployments"], async () => {
      const page = await badRequestOnQueryError(() =>
        pageByCreation(deployments, { prefix, list: parseListQuery(q), allow }),
      );
      return { index: deployments.index, body: page.items, nextToken: page.nextToken };
    });
  });

  app.get(
    "/v1/deployment/:id",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const { deployments } = request.view.tables;
      const body = await blockingQuery(ctx, request, reply, ["deployments"], () => {
        const d = deployments.get(id) ?? single(deployments.withPrefix(id));
        return { index: d?.ModifyIndex ?? deployments.index, body: d ?? null };
      });
      if (!body) throw ApiError.notFound("deployment not found");
      if (!request.identity.allows(body.Namespace, "read-job")) throw ApiError.forbidden();
      return body;
    },
  );

  app.get(
    "/v1/deployment/allocations/:id",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const { allocs, deployments } = request.view.tables;
      const d = deployments.get(id);
      if (d && !request.identity.allows(d.Namespace, "read-job")) throw ApiError.forbidden();
      return blockingQuery(ctx, request, reply, ["allocs"], () => ({
        index: allocs.index,
        body: allocs.by("deployment", id).map((a) => allocStub(a, { resources: false, taskStates: true })),
      }));
    },
  );

  for (const url of ["/v1/deployments", "/v1/deployment/:id", "/v1/deployment/allocations/:id"]) {
    refuseOtherMethods(app, url, ["GET"]);
  }
};

/** The one row of an ID prefix, or undefined when none or several match. */
function single<T>(rows: Iterable<T>): T | undefined {
  let found: T | undefined;
  for (const r of rows) {
    if (found !== undefined) return undefined;
    found = r;
  }
  return found;
}
