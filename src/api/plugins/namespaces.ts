import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { namespaceVolumesRefusal } from "../../../projections/csi-volumes.ts";
import { DEFAULT_NAMESPACE } from "../../../projections/namespaces.ts";
import { namespaceVariablesRefusal } from "../../../projections/variables.ts";
import type { NamespaceDeleted, NamespaceSpec, NamespaceUpserted } from "../../../streams/namespaces.ts";
import { formatErrors } from "../../jobs/multierror.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { nameParam } from "../request-schemas.ts";

const NAME = /^[a-zA-Z0-9-]{1,128}$/;
const MAX_DESCRIPTION = 256;

const namespaceBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    Name: { type: "string" },
    Description: { type: "string" },
    Quota: { type: "string" },
    Meta: { type: ["object", "null"], additionalProperties: { type: "string" } },
    Capabilities: {
      type: ["object", "null"],
      additionalProperties: false,
      properties: {
        EnabledTaskDrivers: { type: ["array", "null"], items: { type: "string" } },
        DisabledTaskDrivers: { type: ["array", "null"], items: { type: "string" } },
      },
    },
    NodePoolConfiguration: { type: ["object", "null"] },
    CreateIndex: { type: "integer" },
    ModifyIndex: { type: "integer" },
  },
} as const;

interface NamespaceBody {
  Name?: string;
  Description?: string;
  Quota?: string;
  Meta?: Record<string, string> | null;
  Capabilities?: { EnabledTaskDrivers?: string[] | null; DisabledTaskDrivers?: string[] | null } | null;
}

/** `/v1/namespaces`, `/v1/namespace` (create, the name in the body) and `/v1/namespace/:name`, as in Nomad. */
export const namespacesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const { namespaces } = ctx.tables;

  app.get(
    "/v1/namespaces",
    { schema: { querystring: { type: "object", properties: { prefix: { type: "string" } } } } },
    async (request, reply) => {
      const { prefix = "" } = request.query as { prefix?: string };
      const { namespaces } = request.view.tables;
      return blockingQuery(ctx, request, reply, ["namespaces"], () => ({
        // Nomad floors the namespace reads at 1 ("the first write must have a higher index").
        index: Math.max(1, namespaces.index),
        // Nomad's Namespace.ListNamespaces keeps those the caller holds any capability in.
        body: [...namespaces.withPrefix(prefix)].filter((n) =>
          request.identity.allows(n.Name, "namespace:any"),
        ),
      }));
    },
  );

  app.get("/v1/namespace/:name", { schema: { params: nameParam } }, async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!request.identity.allows(name, "namespace:any")) throw ApiError.forbidden();
    const { namespaces } = request.view.tables;
    const body = await blockingQuery(ctx, request, reply, ["namespaces"], () => {
      const row = namespaces.get(name);
      return { index: row?.ModifyIndex ?? Math.max(1, namespaces.index), body: row ?? null };
    });
    if (!body) throw ApiError.notFound("Namespace not found");
    return body;
  });

  /** `pathName`: the name in the URL, which the body must repeat (or leave out); none for `/v1/namespace`. */
  const upsert = async (pathName: string | undefined, body: NamespaceBody, request: FastifyRequest) => {
    const spec = validate(pathName, body);
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    const data: NamespaceUpserted = { Namespace: spec };
    return commit(ctx, request.identity, [{ type: "NamespaceUpserted", v: 1, data }]);
  };

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/namespace/:name",
      schema: { params: nameParam, body: namespaceBody },
      handler: async (request, reply) => {
        const { name } = request.params as { name: string };
        if (name === "") throw ApiError.badRequest("Missing Namespace Name");
        const index = await upsert(name, (request.body ?? {}) as NamespaceBody, request);
        reply.header("X-Nomad-Index", String(index));
        return reply.send();
      },
    });
    // Nomad's api Namespaces().Register and `nomad namespace apply` write here.
    app.route({
      method,
      url: "/v1/namespace",
      schema: { body: namespaceBody },
      handler: async (request, reply) => {
        const index = await upsert(undefined, (request.body ?? {}) as NamespaceBody, request);
        reply.header("X-Nomad-Index", String(index));
        return reply.send();
      },
    });
  }
  refuseOtherMethods(app, "/v1/namespace", ["PUT", "POST"]);

  app.delete("/v1/namespace/:name", { schema: { params: nameParam } }, async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!request.identity.allows("*", "management")) throw ApiError.forbidden();
    if (name === DEFAULT_NAMESPACE) throw ApiError.badRequest("default namespace can not be deleted");
    if (!namespaces.has(name)) throw ApiError.notFound(`namespace ${name} not found`);
    const holds =
      namespaceVolumesRefusal(ctx.tables.csiVolumes, name) ??
      namespaceVariablesRefusal(ctx.tables.variables, name);
    if (holds) throw ApiError.badRequest(holds);
    const data: NamespaceDeleted = { Name: name };
    const index = await commit(ctx, request.identity, [{ type: "NamespaceDeleted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return reply.send();
  });
};

function validate(pathName: string | undefined, body: NamespaceBody): NamespaceSpec {
  // Lenient where Nomad is strict: a body without a name takes the path's.
  const name = body.Name || pathName || "";
  if (pathName !== undefined && body.Name && body.Name !== pathName) {
    throw ApiError.badRequest("Namespace name does not match request path");
  }
  const description = body.Description ?? "";
  const errors: string[] = [];
  if (!NAME.test(name)) errors.push(`invalid name ${JSON.stringify(name)}. Must match regex ${NAME.source}`);
  if (description.length > MAX_DESCRIPTION) errors.push(`description longer than ${MAX_DESCRIPTION}`);
  if (errors.length > 0) {
    throw ApiError.badRequest(`Invalid namespace ${JSON.stringify(name)}: ${formatErrors(errors)}`);
  }
  const caps = body.Capabilities;
  return {
    Name: name,
    Description: description,
    Quota: body.Quota ?? "",
    Meta: body.Meta ?? null,
    Capabilities: caps
      ? {
          EnabledTaskDrivers: caps.EnabledTaskDrivers ?? [],
          DisabledTaskDrivers: caps.DisabledTaskDrivers ?? [],
        }
      : null,
  };
}
