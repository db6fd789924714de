import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { variableKey } from "../../../projections/variables.ts";
import type { VarOp } from "../../../streams/variables.ts";
import { parseListQuery } from "../../query/paginator.ts";
import { allowsVariable } from "../../variables/variable-access.ts";
import { itemsObject, type VariableItems } from "../../variables/variable-crypto.ts";
import { pageOfVariables } from "../../variables/variable-list.ts";
import { parseCas } from "../../variables/variable-validation.ts";
import { variableMetadata } from "../../variables/variable-views.ts";
import { applyVariable, openVariable, type VariableWrite } from "../../variables/variable-writes.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import type { ApiContext } from "../context.ts";
import { badRequestOnQueryError } from "../list-pages.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, LIST_PARAMS, textQuery } from "../request-schemas.ts";

const listQuery = textQuery(...LIST_PARAMS, ...COMMON_READ_PARAMS);
const readQuery = textQuery("namespace", ...COMMON_READ_PARAMS);
const writeQuery = textQuery("namespace", "region", "cas");

/** Nomad's VariableDecrypted as a request body; the path in the URL wins over the body's. */
const variableBody = {
  type: ["object", "null"],
  properties: {
    Namespace: { type: "string" },
    Path: { type: "string" },
    CreateIndex: { type: "integer" },
    CreateTime: { type: "integer" },
    ModifyIndex: { type: "integer" },
    ModifyTime: { type: "integer" },
    Items: { type: ["object", "null"], additionalProperties: { type: "string" } },
  },
} as const;

interface VariableBody {
  readonly Namespace?: string;
  readonly Items?: Record<string, string> | null;
}

/** `?namespace=`, else "default": Nomad's RequestNamespace(). */
const requestNamespace = (request: FastifyRequest) =>
  (request.query as { namespace?: string }).namespace || "default";

/**
 * The path after `/v1/var/`, which may hold "/" (fastify has decoded it).
 * Nomad's "missing variable path" when there is none.
 */
function variablePath(request: FastifyRequest): string {
  const path = (request.params as { "*"?: string })["*"] ?? "";
  if (path === "") throw ApiError.badRequest("missing variable path");
  return path;
}

/**
 * `/v1/vars` and `/v1/var/<path>`: Nomad's variables (command/agent/variable_endpoint.go
 * over nomad/variables_endpoint.go). Items are sealed under the active root
 * key before anything is written; the log, snapshots, history, event stream
 * and export only ever hold them sealed, and lists never carry them.
 */
export const variablesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const allows = (request: FastifyRequest, namespace: string, path: string, capability: "list" | "read") =>
    allowsVariable(ctx.config.aclEnabled, request.identity, namespace, path, capability, true);

  app.get("/v1/vars", { schema: { querystring: listQuery } }, async (request, reply) => {
    const q = request.query as Record<string, string | undefined>;
    const namespace = q.namespace || "default";
    const prefix = q.prefix ?? "";
    const { variables } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["variables"], async () => {
      const page = await badRequestOnQueryError(() =>
        pageOfVariables(variables, {
          namespace,
          prefix,
          list: parseListQuery(q),
          // Rows are filtered by the list capability on each path, never refused as a whole.
          allow: (v) => allows(request, v.Namespace, v.Path, "list"),
        }),
      );
      return {
        // Nomad floors the index of a table read at 1.
        index: Math.max(1, variables.index),
        body: page.items.map(variableMetadata),
        nextToken: page.nextToken,
      };
    });
  });
  refuseOtherMethods(app, "/v1/vars", ["GET"]);

  app.get("/v1/var/*", { schema: { querystring: readQuery } }, async (request, reply) => {
    const path = variablePath(request);
    const namespace = requestNamespace(request);
    // Before the lookup, as Nomad's Variables.Read: a path the caller may not read is 403, present or not.
    if (!allows(request, namespace, path, "read")) throw ApiError.forbidden();
    const key = variableKey(namespace, path);
    const { variables } = request.view.tables;
    const row = await blockingQuery(ctx, request, reply, [{ table: "variables", key }], () => {
      const v = variables.get(key);
      return { index: v?.ModifyIndex ?? Math.max(1, variables.index), body: v ?? null };
    });
    if (!row) throw ApiError.notFound("variable not found");
    return { ...variableMetadata(row), Items: openVariable(ctx, row) };
  });

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/var/*",
      schema: { querystring: writeQuery, body: variableBody },
      handler: async (request, reply) => {
        const path = variablePath(request);
        const body = (request.body ?? {}) as VariableBody;
        const items = copyItems(body.Items);
        if (Object.keys(items).length === 0)
          throw ApiError.badRequest("variable missing required Items object");
        const cas = parseCas(request.query as Record<string, unknown>);
        const write: VariableWrite = {
          op: cas === undefined ? "set" : "cas",
          namespace: body.Namespace || requestNamespace(request),
          path,
          items,
          ...(cas === undefined ? {} : { cas }),
        };
        const result = await applyVariable(ctx, request.identity, write);
        reply.header("X-Nomad-Index", String(result.index));
        if (result.kind === "conflict") return reply.status(409).send(result.conflict);
        return result.output;
      },
    });
  }

  app.delete("/v1/var/*", { schema: { querystring: writeQuery } }, async (request, reply) => {
    const path = variablePath(request);
    const cas = parseCas(request.query as Record<string, unknown>);
    const op: VarOp = cas === undefined ? "delete" : "delete-cas";
    const result = await applyVariable(ctx, request.identity, {
      op,
      namespace: requestNamespace(request),
      path,
      ...(cas === undefined ? {} : { cas }),
    });
    reply.header("X-Nomad-Index", String(result.index));
    if (result.kind === "conflict") return reply.status(409).send(result.conflict);
    return reply.status(204).send();
  });

  // Nomad's VariableSpecificRequest answers other methods 400 "Invalid method";
  // here they get the 405 of every other path (no Nomad client sends them).
  refuseOtherMethods(app, "/v1/var/*", ["GET", "PUT", "POST", "DELETE"]);
};

/** The body's items on an object without a prototype (an item may be named "__proto__"). */
function copyItems(items: Record<string, string> | null | undefined): VariableItems {
  const copy = itemsObject();
  if (items) for (const [k, v] of Object.entries(items)) copy[k] = v;
  return copy;
}
