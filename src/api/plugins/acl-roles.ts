import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ACLRolesDeleted, ACLRolesUpserted } from "../../../streams/acl.ts";
import { type RoleBody, roleBodySchema, roleSpecFromBody } from "../../acl/role-input.ts";
import { roleView } from "../../acl/role-view.ts";
import { canSee, visibleRoleIDs, visibleRoleNames } from "../../acl/role-visibility.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, nameParam, textQuery } from "../request-schemas.ts";

const listQuery = textQuery(...COMMON_READ_PARAMS, "prefix");
const readQuery = textQuery(...COMMON_READ_PARAMS);

const ROLE_NOT_FOUND = "ACL role not found";

/**
 * `/v1/acl/roles`, `/v1/acl/role` (create), `/v1/acl/role/:id` and
 * `/v1/acl/role/name/:name`, as Nomad 1.6.1 serves them. The route gate has
 * made the route-level check (management for writes, a valid token for
 * reads); the reads here show a caller who is not management only the roles
 * its token links to.
 */
export const aclRolesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const list = "/v1/acl/roles";
  app.get(list, { schema: { querystring: listQuery } }, async (request, reply) => {
    // Nomad's prefix is on the role ID, not its name.
    const { prefix = "" } = request.query as { prefix?: string };
    // Decided once, against the live tables, as Nomad decides it before its blocking query.
    const visible = visibleRoleIDs(request.identity, ctx.tables.aclRoles);
    const { aclRoles } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["acl_roles"], () => {
      const body: ReturnType<typeof roleView>[] = [];
      for (const row of aclRoles.withPrefix(prefix)) {
        if (canSee(visible, row.ID)) body.push(roleView(row));
      }
      return { index: Math.max(1, aclRoles.index), body };
    });
  });
  refuseOtherMethods(app, list, ["GET"]);

  const one = "/v1/acl/role/:id";
  const pathId = (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    if (id === "") throw ApiError.badRequest("missing ACL role ID");
    return id;
  };

  app.get(one, { schema: { params: idParam, querystring: readQuery } }, async (request, reply) => {
    const id = pathId(request);
    if (!canSee(visibleRoleIDs(request.identity, ctx.tables.aclRoles), id)) throw ApiError.forbidden();
    const { aclRoles } = request.view.tables;
    const row = await blockingQuery(ctx, request, reply, ["acl_roles"], () => {
      const found = aclRoles.get(id);
      return { index: found?.ModifyIndex ?? aclRoles.index, body: found ?? null };
    });
    if (!row) throw ApiError.notFound(ROLE_NOT_FOUND);
    return roleView(row);
  });

  app.get(
    "/v1/acl/role/name/:name",
    { schema: { params: nameParam, querystring: readQuery } },
    async (request, reply) => {
      const { name } = request.params as { name: string };
      if (name === "") throw ApiError.badRequest("missing ACL role name");
      if (!canSee(visibleRoleNames(request.identity, ctx.tables.aclRoles), name)) throw ApiError.forbidden();
      const { aclRoles } = request.view.tables;
      const row = await blockingQuery(ctx, request, reply, ["acl_roles"], () => {
        const [found] = aclRoles.by("name", name);
        return { index: found?.ModifyIndex ?? aclRoles.index, body: found ?? null };
      });
      if (!row) throw ApiError.notFound(ROLE_NOT_FOUND);
      return roleView(row);
    },
  );
  refuseOtherMethods(app, "/v1/acl/role/name/:name", ["GET"]);

  const upsert = async (request: FastifyRequest, reply: FastifyReply, pathID: string | undefined) => {
    const spec = roleSpecFromBody(pathID, request.body as RoleBody | null | undefined, ctx.tables);
    const data: ACLRolesUpserted = { Roles: [spec], AllowMissingPolicies: false };
    const index = await commit(ctx, request.identity, [{ type: "ACLRolesUpserted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    // Nomad answers with the role as stored, found again by its name.
    const [stored] = ctx.tables.aclRoles.by("name", spec.Name);
    if (!stored) throw new ApiError(500, "ACL role lookup failed: no entry found");
    return roleView(stored);
  };

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/acl/role",
      schema: { body: roleBodySchema },
      handler: (request, reply) => upsert(request, reply, undefined),
    });
    app.route({
      method,
      url: one,
      schema: { params: idParam, body: roleBodySchema },
      handler: (request, reply) => upsert(request, reply, pathId(request)),
    });
  }
  refuseOtherMethods(app, "/v1/acl/role", ["PUT", "POST"]);

  app.delete(one, { schema: { params: idParam } }, async (request, reply) => {
    const id = pathId(request);
    // Nomad's state store finds this out inside its transaction (an internal
    // error over HTTP); here before anything is written, as a 404.
    if (!ctx.tables.aclRoles.has(id)) throw ApiError.notFound(ROLE_NOT_FOUND);
    const data: ACLRolesDeleted = { IDs: [id] };
    const index = await commit(ctx, request.identity, [{ type: "ACLRolesDeleted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return reply.send();
  });
  refuseOtherMethods(app, one, ["GET", "PUT", "POST", "DELETE"]);
};
