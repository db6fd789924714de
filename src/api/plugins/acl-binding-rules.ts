import { randomUUID } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { goTime } from "../../../projections/go-time.ts";
import type {
  ACLBindingRuleSpec,
  ACLBindingRulesDeleted,
  ACLBindingRulesUpserted,
  ACLBindType,
} from "../../../streams/acl.ts";
import { requireAclEnabled } from "../../acl/sso/acl-disabled.ts";
import { bindingRuleErrors, bindingRuleInvalid } from "../../acl/sso/binding-rule-rules.ts";
import { bindingRuleHash } from "../../acl/sso/hash.ts";
import { bindingRuleStub, bindingRuleView } from "../../acl/sso/views.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, idParam, textQuery } from "../request-schemas.ts";

const readQuery = textQuery(...COMMON_READ_PARAMS);

/** Nomad's ACLBindingRule as a request body; the server-set fields are accepted and ignored. */
const bindingRuleBodySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    ID: { type: "string" },
    Description: { type: "string" },
    AuthMethod: { type: "string" },
    Selector: { type: "string" },
    BindType: { type: "string" },
    BindName: { type: "string" },
    Hash: {},
    CreateTime: {},
    ModifyTime: {},
    CreateIndex: {},
    ModifyIndex: {},
  },
} as const;

interface BindingRuleBody {
  ID?: string;
  Description?: string;
  AuthMethod?: string;
  Selector?: string;
  BindType?: string;
  BindName?: string;
}

/**
 * `/v1/acl/binding-rules`, `/v1/acl/binding-rule` (create) and
 * `/v1/acl/binding-rule/:id`, as Nomad 1.6.1 serves them (management only:
 * the route gate checks that). Nomad 1.6.1's list takes no filter by auth
 * method, so neither does this one.
 */
export const aclBindingRulesPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const list = "/v1/acl/binding-rules";
  app.get(list, { schema: { querystring: readQuery } }, async (request, reply) => {
    requireAclEnabled(ctx);
    const { aclBindingRules } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["acl_binding_rules"], () => ({
      index: Math.max(1, aclBindingRules.index),
      body: [...aclBindingRules.all()].map(bindingRuleStub),
    }));
  });
  refuseOtherMethods(app, list, ["GET"]);

  const one = "/v1/acl/binding-rule/:id";
  const pathId = (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    if (id === "") throw ApiError.badRequest("missing ACL binding rule ID");
    return id;
  };

  app.get(one, { schema: { params: idParam, querystring: readQuery } }, async (request, reply) => {
    const id = pathId(request);
    requireAclEnabled(ctx);
    const { aclBindingRules } = request.view.tables;
    const row = await blockingQuery(ctx, request, reply, ["acl_binding_rules"], () => {
      const found = aclBindingRules.get(id);
      return { index: found?.ModifyIndex ?? aclBindingRules.index, body: found ?? null };
    });
    if (!row) throw ApiError.notFound("ACL binding rule not found");
    return bindingRuleView(row);
  });

  const upsert = async (request: FastifyRequest, reply: FastifyReply, id: string | undefined) => {
    const body = (request.body ?? {}) as BindingRuleBody;
    // The path's ID stands in for one the body leaves out.
    const ruleId = body.ID || id || "";
    if (id !== undefined && id !== ruleId) {
      throw ApiError.badRequest("ACL binding rule ID does not match request path");
    }
    requireAclEnabled(ctx);
    const { aclBindingRules, aclAuthMethods } = ctx.tables;
    const rule = {
      Description: body.Description ?? "",
      AuthMethod: body.AuthMethod ?? "",
      Selector: body.Selector ?? "",
      BindType: body.BindType ?? "",
      BindName: body.BindName ?? "",
    };
    // A rule with an ID is an update (Nomad's ACLBindingRule.Merge): the
    // empty BindName, BindType and AuthMethod come from the stored rule;
    // Description and Selector are taken as sent.
    const existing = ruleId === "" ? undefined : aclBindingRules.get(ruleId);
    if (ruleId !== "") {
      if (!existing) throw ApiError.badRequest(`cannot find binding rule ${ruleId}`);
      rule.BindName ||= existing.BindName;
      rule.BindType ||= existing.BindType;
      rule.AuthMethod ||= existing.AuthMethod;
      if (rule.AuthMethod !== existing.AuthMethod) {
        throw ApiError.badRequest("cannot update auth method for binding rule, create a new rule instead");
      }
    }
    const errors = bindingRuleErrors(rule, true);
    if (errors.length > 0) throw ApiError.badRequest(bindingRuleInvalid(0, errors));
    if (!aclAuthMethods.has(rule.AuthMethod)) {
      throw ApiError.badRequest(`ACL auth method ${rule.AuthMethod} not found`);
    }
    const now = goTime(ctx.clock.now());
    const unhashed = {
      ID: ruleId || randomUUID(),
      ...rule,
      // Checked by bindingRuleErrors above.
      BindType: rule.BindType as ACLBindType,
    };
    const spec: ACLBindingRuleSpec = {
      ...unhashed,
      Hash: bindingRuleHash(unhashed),
      CreateTime: existing?.CreateTime ?? now,
      ModifyTime: now,
    };
    const data: ACLBindingRulesUpserted = { BindingRules: [spec], AllowMissingAuthMethods: false };
    const index = await commit(ctx, request.identity, [{ type: "ACLBindingRulesUpserted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    const stored = ctx.tables.aclBindingRules.get(spec.ID);
    if (!stored) throw new ApiError(500, "ACL binding rule lookup failed: no entry found");
    return bindingRuleView(stored);
  };

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/acl/binding-rule",
      schema: { body: bindingRuleBodySchema },
      handler: (request, reply) => upsert(request, reply, undefined),
    });
    app.route({
      method,
      url: one,
      schema: { params: idParam, body: bindingRuleBodySchema },
      handler: (request, reply) => upsert(request, reply, pathId(request)),
    });
  }
  refuseOtherMethods(app, "/v1/acl/binding-rule", ["PUT", "POST"]);

  app.delete(one, { schema: { params: idParam } }, async (request, reply) => {
    const id = pathId(request);
    requireAclEnabled(ctx);
    // Nomad finds out at apply (its state store); here before anything is written.
    if (!ctx.tables.aclBindingRules.has(id)) throw ApiError.notFound("ACL binding rule not found");
    const data: ACLBindingRulesDeleted = { IDs: [id] };
    const index = await commit(ctx, request.identity, [{ type: "ACLBindingRulesDeleted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return reply.send();
  });
  refuseOtherMethods(app, one, ["GET", "PUT", "POST", "DELETE"]);
};
