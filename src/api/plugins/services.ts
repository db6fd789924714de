import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { jobKey } from "../../../projections/evals.ts";
import {
  deleteRefusal,
  type ServiceRegistrationRow,
  serviceKey,
  serviceNameKey,
} from "../../../projections/service-registrations.ts";
import type { ServiceRegistrationsDeleted } from "../../../streams/service-registrations.ts";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { compareCodePoints, namespaceIdTokenizer, paginate, parseListQuery } from "../../query/paginator.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { ALL_NAMESPACES, badRequestOnQueryError } from "../list-pages.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, LIST_PARAMS, nameParam, textQuery } from "../request-schemas.ts";
import { ChooseError, chooseServices } from "../service-choose.ts";

const listQuery = textQuery("namespace", ...COMMON_READ_PARAMS);
const serviceQuery = textQuery(...LIST_PARAMS, "choose", ...COMMON_READ_PARAMS);
const readQuery = textQuery("namespace", ...COMMON_READ_PARAMS);
const writeQuery = textQuery("namespace", "region");

const nameAndIdParams = {
  type: "object",
  properties: { name: { type: "string" }, id: { type: "string" } },
  required: ["name", "id"],
} as const;

const TABLE = "service_registrations";

type Query = Record<string, string | undefined>;

/** Nomad's ServiceRegistrationListStub: a namespace's service names, each with the union of its tags. */
interface ServiceListStub {
  readonly Namespace: string;
  readonly Services: { readonly ServiceName: string; readonly Tags: string[] }[];
}

const namespaceOf = (request: FastifyRequest) => (request.query as Query).namespace || "default";

/**
 * Nomad's reads of registrations (List, GetService) let a workload identity
 * through without a capability (`Claims != nil` skips the check); anyone
 * else needs read-job in the namespace.
 */
function mayRead(identity: AuthenticatedIdentity, namespace: string): boolean {
  return identity.actor.kind === "workload" || identity.allows(namespace, "read-job");
}

/**
 * Nomad's native service discovery (command/agent/service_registration_endpoint.go
 * over nomad/service_registration_endpoint.go): `/v1/services`,
 * `/v1/service/:name` and `DELETE /v1/service/:name/:id`, with the job's and
 * the allocation's registrations beside their other reads. Registrations
 * are written by clients over the client RPC (client-rpc/service-registrations.ts).
 */
export const servicesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get("/v1/services", { schema: { querystring: listQuery } }, async (request, reply) => {
    const namespace = namespaceOf(request);
    const { identity } = request;
    // Nomad's wildcard listing filters namespaces and never refuses.
    if (namespace !== ALL_NAMESPACES && !mayRead(identity, namespace)) throw ApiError.forbidden();
    const registrations = request.view.tables.serviceRegistrations;
    return blockingQuery(ctx, request, reply, [TABLE], () => {
      const rows =
        namespace === ALL_NAMESPACES
          ? [...registrations.all()].filter((r) => identity.allows(r.Namespace, "read-job"))
          : [...registrations.withPrefix(serviceKey(namespace, ""))];
      return { index: Math.max(1, registrations.index), body: listStubs(rows) };
    });
  });
  refuseOtherMethods(app, "/v1/services", ["GET"]);

  app.get(
    "/v1/service/:name",
    { schema: { params: nameParam, querystring: serviceQuery } },
    async (request, reply) => {
      const { name } = request.params as { name: string };
      if (name === "") throw ApiError.badRequest("missing service name");
      const namespace = namespaceOf(request);
      if (!mayRead(request.identity, namespace)) throw ApiError.forbidden();
      const q = request.query as Query;
      const registrations = request.view.tables.serviceRegistrations;
      return blockingQuery(ctx, request, reply, [TABLE], () => {
        // In the service_name index's order: by namespace, then ID, as Nomad's pages go.
        const rows = registrations.by("service_name", serviceNameKey(namespace, name));
        const page = badRequestOnQueryError(() => {
          const list = parseListQuery(q);
          if (list.reverse) rows.reverse();
          return paginate(rows, { ...list, tokenizer: namespaceIdTokenizer });
        });
        let services: ServiceRegistrationRow[] = page.items;
        if (q.choose) {
          try {
            services = chooseServices(services, q.choose);
          } catch (err) {
            if (err instanceof ChooseError)
              throw ApiError.badRequest(`failed to choose services: ${err.message}`);
            throw err;
          }
        }
        return { index: Math.max(1, registrations.index), body: services, nextToken: page.nextToken };
      });
    },
  );
  refuseOtherMethods(app, "/v1/service/:name", ["GET"]);

  app.delete(
    "/v1/service/:name/:id",
    { schema: { params: nameAndIdParams, querystring: writeQuery } },
    async (request, reply) => {
      const { id } = request.params as { name: string; id: string };
      if (id === "") throw ApiError.badRequest("missing service id");
      const namespace = namespaceOf(request);
      const { identity } = request;
      const asNode = identity.actor.kind === "node";
      // A node's SecretID is Nomad's fallback here; it removes only that node's registrations.
      if (!asNode && !identity.allows(namespace, "submit-job")) throw ApiError.forbidden();
      const data: ServiceRegistrationsDeleted = {
        Services: [{ Namespace: namespace, ID: id }],
        ...(asNode ? { Reason: "client", NodeID: identity.actor.id } : { Reason: "operator" }),
      };
      const refusal = deleteRefusal(data, ctx.tables.serviceRegistrations);
      if (refusal) throw new ApiError(refusal.code, refusal.reason);
      const index = await commit(ctx, identity, [{ type: "ServiceRegistrationsDeleted", v: 1, data }]);
      reply.header("X-Nomad-Index", String(index));
      return reply.send();
    },
  );
  refuseOtherMethods(app, "/v1/service/:name/:id", ["DELETE"]);

  app.get(
    "/v1/job/:id/services",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const key = jobKey(namespaceOf(request), id);
      const { jobs, serviceRegistrations } = request.view.tables;
      const body = await blockingQuery(ctx, request, reply, [TABLE, "jobs"], () => ({
        index: Math.max(1, serviceRegistrations.index),
        // Nomad tells a job without registrations ([]) from no job (404).
        body: jobs.has(key) ? serviceRegistrations.by("job", key) : null,
      }));
      if (!body) throw ApiError.notFound("job not found");
      return body;
    },
  );
  refuseOtherMethods(app, "/v1/job/:id/services", ["GET"]);

  app.get(
    "/v1/allocation/:id/services",
    { schema: { params: idParam, querystring: readQuery } },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const namespace = namespaceOf(request);
      const { allocs, serviceRegistrations } = request.view.tables;
      const body = await blockingQuery(ctx, request, reply, [TABLE, "allocs"], () => {
        const alloc = allocs.get(id);
        return {
          index: Math.max(1, serviceRegistrations.index),
          // An allocation of another namespace is as good as none (Nomad checks ?namespace= only).
          body: alloc && alloc.Namespace === namespace ? serviceRegistrations.by("alloc", id) : null,
        };
      });
      if (!body) throw ApiError.notFound("allocation not found");
      return body;
    },
  );
  refuseOtherMethods(app, "/v1/allocation/:id/services", ["GET"]);
};

/**
 * Nomad's List answer: per namespace, each service name with the union of
 * its registrations' tags. Nomad builds both from Go maps, in no stable
 * order; here namespaces, names and tags are sorted, so equal states answer
 * equal bytes (and at_index answers compare).
 */
function listStubs(rows: readonly ServiceRegistrationRow[]): ServiceListStub[] {
  const byNamespace = new Map<string, Map<string, Set<string>>>();
  for (const r of rows) {
    let names = byNamespace.get(r.Namespace);
    if (!names) {
      names = new Map();
      byNamespace.set(r.Namespace, names);
    }
    let tags = names.get(r.ServiceName);
    if (!tags) {
      tags = new Set();
      names.set(r.ServiceName, tags);
    }
    for (const t of r.Tags) tags.add(t);
  }
  return [...byNamespace.entries()]
    .sort(([a], [b]) => compareCodePoints(a, b))
    .map(([Namespace, names]) => ({
      Namespace,
      Services: [...names.entries()]
        .sort(([a], [b]) => compareCodePoints(a, b))
        .map(([ServiceName, tags]) => ({ ServiceName, Tags: [...tags].sort(compareCodePoints) })),
    }));
}
