import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ACLTokenRow } from "../../../projections/acl.ts";
import { goTime } from "../../../projections/go-time.ts";
import type {
  ACLBootstrapped,
  ACLOneTimeTokenCreated,
  ACLOneTimeTokenExchanged,
  ACLTokenSpec,
  ACLTokensDeleted,
} from "../../../streams/acl.ts";
import { aclHash } from "../../acl/acl-hash.ts";
import { durationFromJson, GoDurationError } from "../../acl/go-duration.ts";
import { isSealedSecret, openClientSecret, sealClientSecret } from "../../acl/sso/client-secret.ts";
import { type TokenDraft, upsertTokens } from "../../acl/token-upsert.ts";
import { tokenStub, tokenView } from "../../acl/token-view.ts";
import { isTokenIdentity, isWorkloadIdentity, TOKEN_NOT_FOUND } from "../../auth/acl-authenticator.ts";
import { hashSecret } from "../../util/secret-hash.ts";
import { ApiError } from "../api-error.ts";
import { blockingQuery } from "../blocking-query.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Nomad's one-time tokens live 10 minutes (nomad/acl_endpoint.go UpsertOneTimeToken). */
const ONE_TIME_TOKEN_TTL_MS = 10 * 60_000;

/** Nomad's AnonymousACLToken, as WhoAmI shows it. */
const ANONYMOUS_TOKEN = {
  AccessorID: "anonymous",
  SecretID: "",
  Name: "Anonymous Token",
  Type: "client",
  Policies: ["anonymous"],
  Roles: [],
  Global: false,
  CreateTime: "0001-01-01T00:00:00Z",
  CreateIndex: 0,
  ModifyIndex: 0,
};

/** The file an operator writes the reset index into to bootstrap again (Nomad: `<data_dir>/server/acl-bootstrap-reset`). */
export const BOOTSTRAP_RESET_FILE = "acl-bootstrap-reset";

const durationSchema = { anyOf: [{ type: "string" }, { type: "number" }, { type: "null" }] } as const;

/** Nomad's ACLToken as a write body: the fields a caller sets. */
const tokenBody = {
  type: "object",
  properties: {
    AccessorID: { type: "string" },
    SecretID: { type: "string" },
    Name: { type: "string" },
    Type: { type: "string" },
    Policies: { type: ["array", "null"], items: { type: "string" } },
    Roles: {
      type: ["array", "null"],
      items: { type: "object", properties: { ID: { type: "string" }, Name: { type: "string" } } },
    },
    Global: { type: "boolean" },
    ExpirationTime: { type: ["string", "null"] },
    ExpirationTTL: durationSchema,
  },
} as const;

interface TokenBody {
  AccessorID?: string;
  Name?: string;
  Type?: string;
  Policies?: string[] | null;
  Roles?: { ID?: string; Name?: string }[] | null;
  Global?: boolean;
  ExpirationTime?: string | null;
  ExpirationTTL?: string | number | null;
}

const accessorParam = {
  type: "object",
  properties: { accessor: { type: "string" } },
  required: ["accessor"],
} as const;

/** A Go duration as Nomad's ACLToken.UnmarshalJSON takes it: a duration string ("" for none), or nanoseconds. */
function durationNs(value: string | number | null | undefined, field: string): number {
  try {
    return durationFromJson(value, `body.${field}`, true);
  } catch (err) {
    if (err instanceof GoDurationError) throw ApiError.badRequest(err.message);
    throw err;
  }
}

function draftOf(body: TokenBody, accessorID?: string): TokenDraft {
  return {
    AccessorID: accessorID ?? body.AccessorID ?? "",
    Name: body.Name ?? "",
    Type: body.Type ?? "",
    Policies: body.Policies ?? [],
    Roles: body.Roles ?? [],
    Global: body.Global ?? false,
    ExpirationTTL: durationNs(body.ExpirationTTL, "ExpirationTTL"),
    ExpirationTime: body.ExpirationTime ?? null,
  };
}

/**
 * Nomad's ACL token routes: bootstrap, list, create, read, update, delete,
 * `self`, and the one-time tokens of `nomad ui -authenticate`. Route-level
 * permissions come from the gate (src/acl/route-permissions.ts); the rules
 * that depend on the token read are here.
 */
export const aclTokensPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const { aclTokens, aclRoles, aclOneTimeTokens } = ctx.tables;

  const bootstrap = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = (request.body ?? {}) as { BootstrapSecret?: string };
    const provided = body.BootstrapSecret ?? "";
    const done = ctx.tables.aclBootstrap.get("bootstrap");
    let resetIndex = 0;
    if (done) {
      const specified = await bootstrapResetIndex(ctx.config.dataDir);
      if (specified === 0) {
        throw ApiError.badRequest(`ACL bootstrap already done (reset index: ${done.BootstrapIndex})`);
      }
      if (specified !== done.BootstrapIndex) {
        throw ApiError.badRequest(
          `Invalid bootstrap reset index (specified ${specified}, reset index: ${done.BootstrapIndex})`,
        );
      }
      resetIndex = specified;
    }
    if (provided !== "" && !UUID.test(provided)) throw ApiError.badRequest("invalid acl token");
    const secretID = provided || randomUUID();
    const token: ACLTokenSpec = {
      AccessorID: randomUUID(),
      SecretIDHash: hashSecret(secretID),
      Name: "Bootstrap Token",
      Type: "management",
      Policies: [],
      Roles: [],
      Global: true,
      Hash: aclHash(["Bootstrap Token", "management", [], "global", []]),
      CreateTime: goTime(ctx.clock.now()),
      ExpirationTime: null,
      ExpirationTTL: 0,
    };
    const data: ACLBootstrapped = { Token: token, ResetIndex: resetIndex };
    const index = await commit(ctx, request.identity, [{ type: "ACLBootstrapped", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return tokenView(aclTokens.get(token.AccessorID) as ACLTokenRow, aclRoles, secretID);
  };
  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/acl/bootstrap",
      schema: { body: { type: ["object", "null"], properties: { BootstrapSecret: { type: "string" } } } },
      handler: bootstrap,
    });
  }
  refuseOtherMethods(app, "/v1/acl/bootstrap", ["PUT", "POST"]);

  app.get(
    "/v1/acl/tokens",
    { schema: { querystring: { type: "object", properties: { prefix: { type: "string" } } } } },
    async (request, reply) => {
      const { prefix = "" } = request.query as { prefix?: string };
      const { aclTokens, aclRoles } = request.view.tables;
      return blockingQuery(ctx, request, reply, ["acl_tokens", "acl_roles"], () => ({
        index: Math.max(1, aclTokens.index),
        body: [...aclTokens.withPrefix(prefix)]
          .sort((a, b) => a.CreateIndex - b.CreateIndex || (a.AccessorID < b.AccessorID ? -1 : 1))
          .map((t) => tokenStub(t, aclRoles)),
      }));
    },
  );

  const create = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = (request.body ?? {}) as TokenBody;
    if (body.AccessorID) throw ApiError.badRequest("Token AccessorID must not be set when creating a token");
    const { index, tokens } = await upsertTokens(ctx, request.identity, [draftOf(body, "")]);
    reply.header("X-Nomad-Index", String(index));
    return tokens[0];
  };
  for (const method of ["PUT", "POST"] as const) {
    app.route({ method, url: "/v1/acl/token", schema: { body: tokenBody }, handler: create });
  }
  refuseOtherMethods(app, "/v1/acl/token", ["PUT", "POST"]);

  // Nomad's ACL.ResolveToken: the caller's own token, its secret shown back to it.
  app.get("/v1/acl/token/self", async (request, reply) => {
    const identity = request.identity;
    // No token, or one that does not resolve, is Nomad's 404.
    if (!isTokenIdentity(identity) || identity.token === "anonymous")
      throw ApiError.notFound(TOKEN_NOT_FOUND);
    const accessor = identity.token.AccessorID;
    return blockingQuery(ctx, request, reply, ["acl_tokens", "acl_roles"], () => {
      const row = request.view.tables.aclTokens.get(accessor);
      if (!row) throw ApiError.notFound(TOKEN_NOT_FOUND);
      return { index: row.ModifyIndex, body: tokenView(row, request.view.tables.aclRoles, identity.secret) };
    });
  });
  refuseOtherMethods(app, "/v1/acl/token/self", ["GET"]);

  // Nomad's ACL.WhoAmI (an RPC only, in Nomad 1.6): the identity this request
  // was authenticated as, the caller's own token shown with its secret.
  app.get("/v1/acl/whoami", async (request, reply) => {
    const identity = request.identity;
    reply.header("X-Nomad-Index", String(Math.max(1, aclTokens.index)));
    if (isTokenIdentity(identity)) {
      const token =
        identity.token === "anonymous"
          ? ANONYMOUS_TOKEN
          : tokenView(identity.token, aclRoles, identity.secret);
      return { Identity: { ACLToken: token, Claims: null, ClientID: "", TLSName: "", RemoteIP: request.ip } };
    }
    if (isWorkloadIdentity(identity)) {
      return {
        Identity: {
          ACLToken: null,
          Claims: identity.claims,
          ClientID: "",
          TLSName: "",
          RemoteIP: request.ip,
        },
      };
    }
    if (identity.actor.kind === "node") {
      return {
        Identity: {
          ACLToken: null,
          Claims: null,
          ClientID: identity.actor.id,
          TLSName: "",
          RemoteIP: request.ip,
        },
      };
    }
    throw ApiError.forbidden(identity.failure);
  });
  refuseOtherMethods(app, "/v1/acl/whoami", ["GET"]);

  // A one-time token for the caller's own token (`nomad ui -authenticate`). Its
  // exchange answers the token with its SecretID, which the server does not
  // keep in clear: it is sealed under the keyring with the one-time token.
  const upsertOneTime = async (request: FastifyRequest, reply: FastifyReply) => {
    const identity = request.identity;
    if (!isTokenIdentity(identity) || identity.token === "anonymous") throw ApiError.forbidden();
    const oneTimeSecretID = randomUUID();
    const expiresAt = goTime(ctx.clock.now() + ONE_TIME_TOKEN_TTL_MS);
    const data: ACLOneTimeTokenCreated = {
      OneTimeToken: {
        OneTimeSecretHash: hashSecret(oneTimeSecretID),
        AccessorID: identity.token.AccessorID,
        ExpiresAt: expiresAt,
        SealedSecretID: sealClientSecret(ctx.keyring, ctx.tables.rootKeys, identity.secret),
      },
    };
    const index = await commit(ctx, identity, [{ type: "ACLOneTimeTokenCreated", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return {
      OneTimeToken: {
        OneTimeSecretID: oneTimeSecretID,
        AccessorID: identity.token.AccessorID,
        ExpiresAt: expiresAt,
        CreateIndex: index,
        ModifyIndex: index,
      },
    };
  };
  const exchangeOneTime = async (request: FastifyRequest, reply: FastifyReply) => {
    const { OneTimeSecretID = "" } = (request.body ?? {}) as { OneTimeSecretID?: string };
    if (OneTimeSecretID === "") throw ApiError.badRequest("missing OneTimeSecretID");
    const hash = hashSecret(OneTimeSecretID);
    const once = aclOneTimeTokens.get(hash);
    if (!once) throw ApiError.forbidden();
    const data: ACLOneTimeTokenExchanged = { OneTimeSecretHash: hash, At: goTime(ctx.clock.now()) };
    const index = await commit(ctx, request.identity, [{ type: "ACLOneTimeTokenExchanged", v: 1, data }]);
    const token = aclTokens.get(once.AccessorID);
    if (!token) throw ApiError.forbidden();
    reply.header("X-Nomad-Index", String(index));
    const secret = isSealedSecret(once.SealedSecretID)
      ? openClientSecret(ctx.keyring, once.SealedSecretID)
      : "";
    return { Token: tokenView(token, aclRoles, secret) };
  };
  for (const method of ["PUT", "POST"] as const) {
    app.route({ method, url: "/v1/acl/token/onetime", handler: upsertOneTime });
    app.route({
      method,
      url: "/v1/acl/token/onetime/exchange",
      schema: { body: { type: ["object", "null"], properties: { OneTimeSecretID: { type: "string" } } } },
      handler: exchangeOneTime,
    });
  }
  refuseOtherMethods(app, "/v1/acl/token/onetime", ["PUT", "POST"]);
  refuseOtherMethods(app, "/v1/acl/token/onetime/exchange", ["PUT", "POST"]);

  // Nomad's ACL.GetToken: management, or the caller's own token (its secret shown back).
  app.get("/v1/acl/token/:accessor", { schema: { params: accessorParam } }, async (request, reply) => {
    const { accessor } = request.params as { accessor: string };
    const identity = request.identity;
    const own =
      isTokenIdentity(identity) && identity.token !== "anonymous" && identity.token.AccessorID === accessor;
    if (!own && !identity.allows("*", "management")) throw ApiError.forbidden();
    const body = await blockingQuery(ctx, request, reply, ["acl_tokens", "acl_roles"], () => {
      const { aclTokens, aclRoles } = request.view.tables;
      const row = aclTokens.get(accessor);
      return {
        index: row?.ModifyIndex ?? Math.max(1, aclTokens.index),
        body: row ? tokenView(row, aclRoles, own && isTokenIdentity(identity) ? identity.secret : "") : null,
      };
    });
    if (!body) throw ApiError.notFound(TOKEN_NOT_FOUND);
    return body;
  });

  const update = async (request: FastifyRequest, reply: FastifyReply) => {
    const { accessor } = request.params as { accessor: string };
    const body = (request.body ?? {}) as TokenBody;
    if (body.AccessorID && body.AccessorID !== accessor) {
      throw ApiError.badRequest("Token Accessor ID does not match request path");
    }
    const { index, tokens } = await upsertTokens(ctx, request.identity, [draftOf(body, accessor)]);
    reply.header("X-Nomad-Index", String(index));
    return tokens[0];
  };
  for (const method of ["PUT", "POST"] as const) {
    app.route({
      method,
      url: "/v1/acl/token/:accessor",
      schema: { params: accessorParam, body: tokenBody },
      handler: update,
    });
  }
  app.delete("/v1/acl/token/:accessor", { schema: { params: accessorParam } }, async (request, reply) => {
    const { accessor } = request.params as { accessor: string };
    if (!aclTokens.has(accessor)) throw ApiError.badRequest(`Cannot delete nonexistent tokens: ${accessor}`);
    const data: ACLTokensDeleted = { AccessorIDs: [accessor], Reason: "deleted" };
    const index = await commit(ctx, request.identity, [{ type: "ACLTokensDeleted", v: 1, data }]);
    reply.header("X-Nomad-Index", String(index));
    return reply.send();
  });
  refuseOtherMethods(app, "/v1/acl/token/:accessor", ["GET", "PUT", "POST", "DELETE"]);
};

/** The index written in the reset file, 0 when there is none or it is not a number (Nomad's fileBootstrapResetIndex). */
async function bootstrapResetIndex(dataDir: string): Promise<number> {
  let text: string;
  try {
    text = await readFile(join(dataDir, "server", BOOTSTRAP_RESET_FILE), "utf8");
  } catch {
    return 0;
  }
  const n = Number(text.trim());
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}
