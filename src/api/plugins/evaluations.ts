import type { FastifyPluginAsync } from "fastify";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { compileFilter, type Filter, FilterError } from "../../query/filter/index.ts";
import { type ListQuery, parseListQuery } from "../../query/paginator.ts";
import { queryBool } from "../../query/query-bool.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import {
  DELETE_PAGE_SIZE,
  deleteEvalsByFilter,
  deleteEvalsByID,
  MAX_IDS_PER_DELETE,
} from "../eval-delete.ts";
import { countEvals, listEvals, relatedEvals } from "../eval-listing.ts";
import { ALL_NAMESPACES, badRequestOnQueryError } from "../list-pages.ts";
import { allocStub } from "../node-views.ts";
import {
  COMMON_READ_PARAMS,
  idParam,
  LIST_PARAMS,
  textQuery,
  WRITE_REQUEST_FIELDS,
} from "../request-schemas.ts";

const DEFAULT_NAMESPACE = "default";

const readQuery = textQuery(...LIST_PARAMS, "status", "job", "related", ...COMMON_READ_PARAMS);

/** Nomad's EvalDeleteRequest as its Go client encodes it (WriteRequest fields embedded). */
const deleteBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    EvalIDs: { type: ["array", "null"], items: { type: "string" } },
    Filter: { type: "string" },
    ...WRITE_REQUEST_FIELDS,
  },
} as const;

const deleteQuery = {
  type: "object",
  properties: {
    // chronomad's own: records per delete-by-filter page (Nomad fixes it at 728).
    per_page: { type: "integer", minimum: 1, maximum: MAX_IDS_PER_DELETE },
  },
} as const;

interface ReadQuery {
  namespace?: string;
  prefix?: string;
  filter?: string;
  status?: string;
  job?: string;
  related?: string;
}

interface DeleteBody {
  EvalIDs?: string[] | null;
  Filter?: string;
}

/** `/v1/evaluations`, `/v1/evaluations/count`, `/v1/evaluation/:id[/allocations]`, as in Nomad. */
export const evaluationsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get("/v1/evaluations", { schema: { querystring: readQuery } }, async (request, reply) => {
    const { evals } = request.view.tables;
    const query = request.query as ReadQuery;
    const namespace = namespaceOf(query);
    requireRead(request.identity, namespace);
    const list = listQuery(request.query as Record<string, unknown>);
    const status = query.status ?? "";
    const job = query.job ?? "";
    if (list.filter && (status !== "" || job !== "")) {
      throw ApiError.badRequest("Filter expression cannot be used with other filter parameters");
    }
    const allowNamespace = namespaceCheck(request.identity);
    return blockingQuery(ctx, request, reply, ["evals"], async () => {
      const page = await badRequestOnQueryError(() =>
        listEvals(evals, { namespace, prefix: query.prefix ?? "", status, job, list, allowNamespace }),
      );
      return { index: evals.index, body: page.items, nextToken: page.nextToken };
    });
  });

  app.get("/v1/evaluations/count", { schema: { querystring: readQuery } }, async (request, reply) => {
    const { evals, namespaces } = request.view.tables;
    const query = request.query as ReadQuery;
    const namespace = namespaceOf(query);
    requireRead(request.identity, namespace);
    const filter = query.filter ? compile(query.filter) : undefined;
    const allowNamespace = namespaceCheck(request.identity);
    const allowsEveryNamespace = [...namespaces.all()].every((n) => allowNamespace(n.Name));
    return blockingQuery(ctx, request, reply, ["evals"], async () => {
      const count = await countEvals(evals, {
        namespace,
        prefix: query.prefix ?? "",
        filter,
        allowNamespace,
        allowsEveryNamespace,
      });
      // The whole RPC reply, as Nomad's handler returns it; LastContact is a Go duration (ns).
      return {
        index: evals.index,
        body: {
          Count: count,
          Index: evals.index,
          LastContact: Math.round(ctx.leadership.lastContactMs() * 1e6),
          KnownLeader: ctx.leadership.leaderAddress() !== "",
          NextToken: "",
        },
      };
    });
  });

  app.get(
    "/v1/evaluation/:id",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const { evals } = request.view.tables;
      const query = request.query as ReadQuery;
      requireRead(request.identity, namespaceOf(query));
      const related = queryBool(request.query as Record<string, unknown>, "related") ?? false;
      const body = await blockingQuery(ctx, request, reply, ["evals"], () => {
        const row = evals.get(id);
        if (!row) return { index: evals.index, body: undefined };
        if (!request.identity.allows(row.Namespace, "read-job")) throw ApiError.forbidden();
        const body = related ? { ...row, RelatedEvals: relatedEvals(evals, row) } : row;
        return { index: row.ModifyIndex, body };
      });
      if (!body) throw ApiError.notFound("eval not found");
      return body;
    },
  );

  app.get(
    "/v1/evaluation/:id/allocations",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      requireRead(request.identity, namespaceOf(request.query as ReadQuery));
      const { allocs } = request.view.tables;
      return blockingQuery(ctx, request, reply, ["allocs"], () => {
        const rows = allocs.by("eval", id);
        // An evaluation's allocations share its namespace (Nomad checks the first one).
        const namespace = rows[0]?.Namespace;
        if (namespace !== undefined && !request.identity.allows(namespace, "read-job")) {
          throw ApiError.forbidden();
        }
        // Nomad's alloc.Stub(nil): task states, no resources.
        const body = rows.map((a) => allocStub(a, { resources: false, taskStates: true }));
        return { index: allocs.index, body };
      });
    },
  );

  app.delete(
    "/v1/evaluations",
    { schema: { body: deleteBody, querystring: deleteQuery } },
    async (request, reply) => {
      const body = request.body as DeleteBody | null | undefined;
      if (body === undefined || body === null) throw ApiError.badRequest("Request body is empty");
      const ids = body.EvalIDs ?? [];
      const filterText = body.Filter ?? "";
      if (filterText !== "" && ids.length > 0) {
        throw ApiError.badRequest("evals cannot be deleted by both ID and filter");
      }
      if (filterText === "" && ids.length === 0) {
        throw ApiError.badRequest("evals must be deleted by either ID or filter");
      }
      if (ids.length > MAX_IDS_PER_DELETE) {
        throw ApiError.badRequest(
          `request includes ${ids.length} evaluation IDs, must be ${MAX_IDS_PER_DELETE} or fewer`,
        );
      }
      if (!request.identity.allows(ALL_NAMESPACES, "management")) throw ApiError.forbidden();
      const perPage = (request.query as { per_page?: number }).per_page ?? DELETE_PAGE_SIZE;
      const result =
        filterText !== ""
          ? await deleteEvalsByFilter(ctx, request.identity, compile(filterText), perPage)
          : await deleteEvalsByID(ctx, request.identity, ids);
      reply.header("X-Nomad-Index", String(result.Index));
      return result;
    },
  );
};

function namespaceOf(query: ReadQuery): string {
  return query.namespace || DEFAULT_NAMESPACE;
}

/** Nomad checks read-job on the requested namespace first (`*`: any namespace the caller may read). */
function requireRead(identity: AuthenticatedIdentity, namespace: string): void {
  if (!identity.allows(namespace, "read-job")) throw ApiError.forbidden();
}

/** The caller's read-job check per namespace, asked once per namespace per request. */
function namespaceCheck(identity: AuthenticatedIdentity): (namespace: string) => boolean {
  const seen = new Map<string, boolean>();
  return (namespace) => {
    let ok = seen.get(namespace);
    if (ok === undefined) {
      ok = identity.allows(namespace, "read-job");
      seen.set(namespace, ok);
    }
    return ok;
  };
}

function listQuery(query: Record<string, unknown>): ListQuery {
  return badRequestOnQueryError(() => parseListQuery(query));
}

function compile(expression: string): Filter {
  try {
    return compileFilter(expression);
  } catch (err) {
    if (err instanceof FilterError)
      throw ApiError.badRequest(`failed to read filter expression: ${err.detail}`);
    throw err;
  }
}
