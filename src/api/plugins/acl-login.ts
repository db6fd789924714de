import type { FastifyPluginAsync } from "fastify";
import { AclLogin } from "../../acl/login/login.ts";
import { requireAclEnabled } from "../../acl/sso/acl-disabled.ts";
import { formatErrors } from "../../jobs/multierror.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";

/**
 * `/v1/acl/login` (JWT), `/v1/acl/oidc/auth-url` and
 * `/v1/acl/oidc/complete-auth` (OIDC), as Nomad's HTTP agent serves them
 * (`command/agent/acl_endpoint.go`): PUT or POST, no token needed (what the
 * caller brings is the credential), answers Nomad's ACLToken with its
 * SecretID, or `{AuthURL}`.
 */

const loginBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: { AuthMethodName: { type: "string" }, LoginToken: { type: "string" } },
} as const;

const authUrlBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    AuthMethodName: { type: "string" },
    RedirectURI: { type: "string" },
    ClientNonce: { type: "string" },
  },
} as const;

const completeAuthBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    AuthMethodName: { type: "string" },
    ClientNonce: { type: "string" },
    State: { type: "string" },
    Code: { type: "string" },
    RedirectURI: { type: "string" },
  },
} as const;

type Body = Partial<Record<string, string>>;

/** Nomad's request Validate: every missing field named, in its order, as a multierror. */
function requireFields<K extends string>(
  what: string,
  body: Body,
  fields: readonly (readonly [K, string])[],
): Record<K, string> {
  const missing = fields.filter(([field]) => !body[field]).map(([, message]) => message);
  if (missing.length > 0) throw ApiError.badRequest(`invalid ${what} request: ${formatErrors(missing)}`);
  return body as Record<K, string>;
}

export const aclLoginPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const login = new AclLogin(ctx);

  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/acl/login",
      schema: { body: loginBody },
      handler: async (request, reply) => {
        requireAclEnabled(ctx);
        const body = requireFields("login", (request.body ?? {}) as Body, [
          ["AuthMethodName", "missing auth method name"],
          ["LoginToken", "missing login token"],
        ]);
        const started = performance.now();
        const { index, token } = await login.login(body.AuthMethodName, body.LoginToken);
        ctx.metrics.sample("chronomad.acl.login_ms", performance.now() - started);
        reply.header("X-Nomad-Index", String(index));
        return token;
      },
    });

    app.route({
      method,
      url: "/v1/acl/oidc/auth-url",
      schema: { body: authUrlBody },
      handler: async (request) => {
        requireAclEnabled(ctx);
        const body = requireFields("OIDC auth-url", (request.body ?? {}) as Body, [
          ["AuthMethodName", "missing auth method name"],
          ["ClientNonce", "missing client nonce"],
          ["RedirectURI", "missing redirect URI"],
        ]);
        const started = performance.now();
        const authUrl = await login.authUrl(body.AuthMethodName, body.RedirectURI, body.ClientNonce);
        ctx.metrics.sample("chronomad.acl.oidc_auth_url_ms", performance.now() - started);
        return { AuthURL: authUrl };
      },
    });

    app.route({
      method,
      url: "/v1/acl/oidc/complete-auth",
      schema: { body: completeAuthBody },
      handler: async (request, reply) => {
        requireAclEnabled(ctx);
        const body = requireFields("OIDC complete-auth", (request.body ?? {}) as Body, [
          ["AuthMethodName", "missing auth method name"],
          ["ClientNonce", "missing client nonce"],
          ["State", "missing state"],
          ["Code", "missing code"],
          ["RedirectURI", "missing redirect URI"],
        ]);
        const started = performance.now();
        const { index, token } = await login.completeAuth(body.AuthMethodName, {
          state: body.State,
          code: body.Code,
          redirectUri: body.RedirectURI,
          clientNonce: body.ClientNonce,
        });
        ctx.metrics.sample("chronomad.acl.oidc_complete_auth_ms", performance.now() - started);
        reply.header("X-Nomad-Index", String(index));
        return token;
      },
    });
  }
  for (const url of ["/v1/acl/login", "/v1/acl/oidc/auth-url", "/v1/acl/oidc/complete-auth"]) {
    refuseOtherMethods(app, url, ["PUT", "POST"]);
  }
};
