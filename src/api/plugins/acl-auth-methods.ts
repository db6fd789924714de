import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { type ACLAuthMethodRow, defaultAuthMethod } from "../../../projections/acl-sso.ts";
import { goTime } from "../../../projections/go-time.ts";
import type {
  ACLAuthMethodConfigSpec,
  ACLAuthMethodSpec,
  ACLAuthMethodsDeleted,
  ACLAuthMethodsUpserted,
  ACLAuthMethodType,
  ACLTokenLocality,
} from "../../../streams/acl.ts";
import { requireAclEnabled } from "../../acl/sso/acl-disabled.ts";
import {
  type AuthMethodBody,
  authMethodBodySchema,
  authMethodFromBody,
} from "../../acl/sso/auth-method-body.ts";
import { authMethodErrors, authMethodInvalid } from "../../acl/sso/auth-method-rules.ts";
import { ClientSecretError, sealClientSecret } from "../../acl/sso/client-secret.ts";
import { authMethodHash } from "../../acl/sso/hash.ts";
import { authMethodStub, authMethodView } from "../../acl/sso/views.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { COMMON_READ_PARAMS, nameParam, textQuery } from "../request-schemas.ts";

const readQuery = textQuery(...COMMON_READ_PARAMS);

const MS_TO_NS = 1e6;

/** The secret cannot be sealed or opened here (no key): the server's problem, said plainly. */
function withSecrets<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ClientSecretError) throw new ApiError(500, err.message);
    throw err;
  }
}

/**
 * `/v1/acl/auth-methods`, `/v1/acl/auth-method` (create) and
 * `/v1/acl/auth-method/:name`, as Nomad 1.6.1 serves them. Who may call them
 * is the route gate's business (the list is public, the rest management);
 * the full method, client secret included, is what a management token reads.
 */
export const aclAuthMethodsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const list = "/v1/acl/auth-methods";
  app.get(list, { schema: { querystring: readQuery } }, async (request, reply) => {
    requireAclEnabled(ctx);
    const { aclAuthMethods } = request.view.tables;
    return blockingQuery(ctx, request, reply, ["acl_auth_methods"], () => ({
      index: Math.max(1, aclAuthMethods.index),
      body: [...aclAuthMethods.all()].map(authMethodStub),
    }));
  });
  refuseOtherMethods(app, list, ["GET"]);

  const one = "/v1/acl/auth-method/:name";
  const pathName = (request: FastifyRequest) => {
    const { name } = request.params as { name: string };
    if (name === "") throw ApiError.badRequest("missing ACL auth-method name");
    return name;
  };

  app.get(one, { schema: { params: nameParam, querystring: readQuery } }, async (request, reply) => {
    const name = pathName(request);
    requireAclEnabled(ctx);
    const { aclAuthMethods } = request.view.tables;
    const row = await blockingQuery(ctx, request, reply, ["acl_auth_methods"], () => {
      const found = aclAuthMethods.get(name);
      return { index: found?.ModifyIndex ?? aclAuthMethods.index, body: found ?? null };
    });
    if (!row) throw ApiError.notFound("ACL auth-method not found");
    return withSecrets(() => authMethodView(row, ctx.keyring));
  });

  const upsert = async (request: FastifyRequest, reply: FastifyReply, name: string | undefined) => {
    requireAclEnabled(ctx);
    const input = authMethodFromBody((request.body ?? {}) as AuthMethodBody);
    if (name !== undefined && name !== input.Name) {
      throw ApiError.badRequest("ACL auth-method name does not match request path");
    }
    const { aclAuthMethods, rootKeys } = ctx.tables;
    const existing = aclAuthMethods.get(input.Name);
    // Nomad's ACLAuthMethod.Merge: what the caller left empty comes from the
    // stored method, Default and Name excepted; a config given replaces the
    // stored one whole.
    const merged = {
      Name: input.Name,
      Type: input.Type || existing?.Type || "",
      TokenLocality: input.TokenLocality || existing?.TokenLocality || "",
      MaxTokenTTL: input.MaxTokenTTL || existing?.MaxTokenTTL || 0,
      Default: input.Default,
    };
    const errors = authMethodErrors(merged, {
      min: ctx.config.aclTokenMinExpirationTtl * MS_TO_NS,
      max: ctx.config.aclTokenMaxExpirationTtl * MS_TO_NS,
    });
    if (errors.length > 0) throw ApiError.badRequest(authMethodInvalid(0, errors));
    if (merged.Default) {
      const other = defaultAuthMethod(aclAuthMethods, merged.Name);
      if (other) throw ApiError.badRequest(`default method already exists: ${other.Name}`);
    }
    let config: ACLAuthMethodConfigSpec | null = existing?.Config ?? null;
    if (input.Config) {
      const c = input.Config;
      const secret = c.OIDCClientSecret;
      config = {
        JWTValidationPubKeys: c.JWTValidationPubKeys,
        JWKSURL: c.JWKSURL,
        JWKSCACert: c.JWKSCACert,
        OIDCDiscoveryURL: c.OIDCDiscoveryURL,
        OIDCClientID: c.OIDCClientID,
        // Sealed here, before the event exists: the log never sees it in clear.
        OIDCClientSecretSealed:
          secret === "" ? null : withSecrets(() => sealClientSecret(ctx.keyring, rootKeys, secret)),
        OIDCScopes: c.OIDCScopes,
        BoundAudiences: c.BoundAudiences,
        BoundIssuer: c.BoundIssuer,
        AllowedRedirectURIs: c.AllowedRedirectURIs,
        DiscoveryCaPem: c.DiscoveryCaPem,
        SigningAlgs: c.SigningAlgs,
        ExpirationLeeway: c.ExpirationLeeway,
        NotBeforeLeeway: c.NotBeforeLeeway,
        ClockSkewLeeway: c.ClockSkewLeeway,
        ClaimMappings: c.ClaimMappings,
        ListClaimMappings: c.ListClaimMappings,
      };
    }
    const now = goTime(ctx.clock.now());
    const unhashed = {
      Name: merged.Name,
      // Checked by authMethodErrors above.
      Type: merged.Type as ACLAuthMethodType,
      TokenLocality: merged.TokenLocality as ACLTokenLocality,
      MaxTokenTTL: merged.MaxTokenTTL,
      Default: merged.Default,
      Config: config,
    };
    const method: ACLAuthMethodSpec = {
      ...unhashed,
      Hash: authMethodHash(unhashed),
      CreateTime: existing?.CreateTime ?? now,
      ModifyTime: now,
    };
    const data: ACLAuthMethodsUpserted = { AuthMethods: [method] };
    const index = await commit(ctx, request.identity, [{ type: "ACLAuthMethodsUpserted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    const stored: ACLAuthMethodRow | undefined = ctx.tables.aclAuthMethods.get(method.Name);
    // Deleted again between the apply and this read: Nomad answers no body then.
    if (!stored) return reply.send();
    return withSecrets(() => authMethodView(stored, ctx.keyring));
  };

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/acl/auth-method",
      schema: { body: authMethodBodySchema },
      handler: (request, reply) => upsert(request, reply, undefined),
    });
    app.route({
      method,
      url: one,
      schema: { params: nameParam, body: authMethodBodySchema },
      handler: (request, reply) => upsert(request, reply, pathName(request)),
    });
  }
  refuseOtherMethods(app, "/v1/acl/auth-method", ["PUT", "POST"]);

  app.delete(one, { schema: { params: nameParam } }, async (request, reply) => {
    const name = pathName(request);
    requireAclEnabled(ctx);
    // Nomad finds out at apply (its state store); here before anything is written.
    if (!ctx.tables.aclAuthMethods.has(name)) throw ApiError.notFound("ACL auth method not found");
    const data: ACLAuthMethodsDeleted = { Names: [name] };
    const index = await commit(ctx, request.identity, [{ type: "ACLAuthMethodsDeleted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return reply.send();
  });
  refuseOtherMethods(app, one, ["GET", "PUT", "POST", "DELETE"]);
};
