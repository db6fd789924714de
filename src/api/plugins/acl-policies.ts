import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ACLPoliciesDeleted, ACLPoliciesUpserted } from "../../../streams/acl.ts";
import { type PolicyBody, policyBodySchema, policySpecFromBody } from "../../acl/policy-input.ts";
import { policyStub, policyView } from "../../acl/policy-view.ts";
import { visiblePolicyNames } from "../../acl/policy-visibility.ts";
import { canSee } from "../../acl/role-visibility.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, nameParam, textQuery } from "../request-schemas.ts";

const listQuery = textQuery(...COMMON_READ_PARAMS, "prefix");
const readQuery = textQuery(...COMMON_READ_PARAMS);

/** The anonymous policy governs callers without a token: anyone may read it. */
const ANONYMOUS_POLICY = "anonymous";

/**
 * `/v1/acl/policies` and `/v1/acl/policy/:name`, as Nomad 1.6.1 serves them.
 * The route gate has made the route-level check (management for writes, a
 * valid token for reads); the reads here show a caller who is not
 * management only the policies its token links to, directly or through its
 * roles.
 */
export const aclPoliciesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const list = "/v1/acl/policies";
  app.get(list, { schema: { querystring: listQuery } }, async (request, reply) => {
    const { prefix = "" } = request.query as { prefix?: string };
    // Who may see what is decided once, against the live tables, as Nomad decides it before its blocking query.
    const visible = visiblePolicyNames(request.identity, ctx.tables);
    const { aclPolicies } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["acl_policies"], () => {
      const body: ReturnType<typeof policyStub>[] = [];
      for (const row of aclPolicies.withPrefix(prefix)) {
        if (canSee(visible, row.Name)) body.push(policyStub(row));
      }
      // Nomad floors the list's index at 1 so a blocking query can follow it.
      return { index: Math.max(1, aclPolicies.index), body };
    });
  });
  refuseOtherMethods(app, list, ["GET"]);

  const one = "/v1/acl/policy/:name";
  const pathName = (request: FastifyRequest) => {
    const { name } = request.params as { name: string };
    if (name === "") throw ApiError.badRequest("Missing Policy Name");
    return name;
  };

  app.get(one, { schema: { params: nameParam, querystring: readQuery } }, async (request, reply) => {
    const name = pathName(request);
    if (name !== ANONYMOUS_POLICY && !canSee(visiblePolicyNames(request.identity, ctx.tables), name)) {
      throw ApiError.forbidden();
    }
    const { aclPolicies } = request.view.tables;
    const row = await blockingQuery(ctx, request, reply, ["acl_policies"], () => {
      const found = aclPolicies.get(name);
      return { index: found?.ModifyIndex ?? aclPolicies.index, body: found ?? null };
    });
    if (!row) throw ApiError.notFound("ACL policy not found");
    return policyView(row);
  });

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: one,
      schema: { params: nameParam, body: policyBodySchema },
      handler: async (request, reply) => {
        const name = pathName(request);
        const spec = await policySpecFromBody(name, request.body as PolicyBody | null | undefined);
        const data: ACLPoliciesUpserted = { Policies: [spec] };
        const index = await commit(ctx, request.identity, [{ type: "ACLPoliciesUpserted", v: 1, data }]);
        reply.header("X-Nomad-Index", String(index));
        // Nomad answers a policy write with no body, only the index.
        return reply.send();
      },
    });
  }

  app.delete(one, { schema: { params: nameParam } }, async (request, reply) => {
    const name = pathName(request);
    // Nomad deletes whatever of the names exists: a missing policy is no error.
    const data: ACLPoliciesDeleted = { Names: [name] };
    const index = await commit(ctx, request.identity, [{ type: "ACLPoliciesDeleted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return reply.send();
  });
  refuseOtherMethods(app, one, ["GET", "PUT", "POST", "DELETE"]);
};
