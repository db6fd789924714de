import { type ACLAuthMethodRow, BY_AUTH_METHOD } from "../../../projections/acl-sso.ts";
import type { Actor } from "../../../streams/event-schema.ts";
import { ApiError } from "../../api/api-error.ts";
import type { ApiContext } from "../../api/context.ts";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { ClientSecretError, isSealedSecret, openClientSecret } from "../sso/client-secret.ts";
import { upsertTokens } from "../token-upsert.ts";
import { BindError, type BinderState, bind, bindsNothing } from "./binder.ts";
import { type Claims, ClaimsError, interpolationVars, selectorData } from "./claims.ts";
import { JwtValidator, TokenValidationError } from "./jwt-validator.ts";
import { type CompleteAuthRequest, OidcFlow } from "./oidc-flow.ts";
import { OidcLoginError } from "./oidc-provider.ts";

/**
 * Nomad's ACL.Login, ACL.OIDCAuthURL and ACL.OIDCCompleteAuth
 * (`nomad/acl_endpoint.go`) on chronomad's tables: find the auth method,
 * validate what the caller brings (a JWT, or an OIDC code), turn its claims
 * into bindings, and mint the token through the same path as a token
 * create (src/acl/token-upsert.ts).
 *
 * The token is written with the actor `{ kind: "server", id: "acl-login",
 * name: "<method>:<sub>" }`: Nomad writes it as its leader, which says
 * nothing of who logged in; the log says which method let which subject in.
 */

/** The minted token, as Nomad's ACLToken JSON (with its SecretID), and the index of its write. */
export interface LoginResult {
  readonly index: number;
  readonly token: Record<string, unknown>;
}

export interface LoginOptions {
  /** Deadline of each request to a provider (ms); Nomad's is 60 s. */
  readonly timeoutMs?: number;
  /** How long an OIDC login may wait between auth-url and complete-auth (ms). */
  readonly pendingTtlMs?: number;
}

/** Longest subject kept in the actor's name: a claim is the provider's text, not ours to store unbounded. */
const MAX_SUBJECT = 256;

export class AclLogin {
  private readonly jwt: JwtValidator;
  private readonly oidc: OidcFlow;

  constructor(
    private readonly ctx: ApiContext,
    options: LoginOptions = {},
  ) {
    this.jwt = new JwtValidator({ timeoutMs: options.timeoutMs });
    this.oidc = new OidcFlow({ timeoutMs: options.timeoutMs, pendingTtlMs: options.pendingTtlMs });
  }

  /** ACL.Login: a JWT for a JWT auth method. */
  async login(authMethodName: string, loginToken: string): Promise<LoginResult> {
    const method = this.method(authMethodName);
    if (method.Type !== "JWT") throw ApiError.badRequest(`unsupported auth-method type: ${method.Type}`);
    let claims: Record<string, unknown>;
    try {
      claims = await this.jwt.validate(method, loginToken);
    } catch (err) {
      if (err instanceof TokenValidationError) throw new ApiError(err.status, err.message);
      throw err;
    }
    return this.mint(method, "JWT", claims, undefined);
  }

  /** ACL.OIDCAuthURL: the provider's sign-in URL. */
  async authUrl(authMethodName: string, redirectUri: string, clientNonce: string): Promise<string> {
    const method = this.oidcMethod(authMethodName);
    return oidcErrors(() => this.oidc.authUrl(method, { redirectUri, clientNonce }));
  }

  /** ACL.OIDCCompleteAuth: the provider's code for a token. */
  async completeAuth(authMethodName: string, req: CompleteAuthRequest): Promise<LoginResult> {
    const method = this.oidcMethod(authMethodName);
    const secret = this.clientSecret(method);
    const { idClaims, userClaims } = await oidcErrors(() => this.oidc.completeAuth(method, secret, req));
    return this.mint(method, "OIDC", idClaims, userClaims);
  }

  private method(name: string): ACLAuthMethodRow {
    const method = this.ctx.tables.aclAuthMethods.get(name);
    if (!method) throw ApiError.badRequest(`auth-method ${JSON.stringify(name)} not found`);
    return method;
  }

  private oidcMethod(name: string): ACLAuthMethodRow {
    const method = this.method(name);
    // Nomad does not look at the type here and fails later building a provider; the type says it sooner.
    if (method.Type !== "OIDC") throw ApiError.badRequest(`unsupported auth-method type: ${method.Type}`);
    return method;
  }

  private clientSecret(method: ACLAuthMethodRow): string {
    const sealed = method.Config?.OIDCClientSecretSealed;
    if (sealed === null || sealed === undefined) return "";
    if (!isSealedSecret(sealed)) throw new ApiError(500, "the auth method's client secret is malformed");
    try {
      return openClientSecret(this.ctx.keyring, sealed);
    } catch (err) {
      if (err instanceof ClientSecretError) throw new ApiError(500, err.message);
      throw err;
    }
  }

  /** §2.4 steps 1–5: claims, bindings, the token. */
  private async mint(
    method: ACLAuthMethodRow,
    kind: "JWT" | "OIDC",
    idClaims: Claims,
    userClaims: Claims | undefined,
  ): Promise<LoginResult> {
    const { tables } = this.ctx;
    const config = method.Config ?? { ClaimMappings: {}, ListClaimMappings: {} };
    let bindings: ReturnType<typeof bind>;
    try {
      const claims = selectorData(config, idClaims, userClaims);
      const state: BinderState = {
        bindingRules: (m) => tables.aclBindingRules.by(BY_AUTH_METHOD, m),
        roleByName: (n) => tables.aclRoles.by("name", n)[0],
        policyExists: (n) => tables.aclPolicies.has(n),
      };
      bindings = bind(state, method.Name, { claims, vars: interpolationVars(config, claims) });
    } catch (err) {
      if (err instanceof ClaimsError || err instanceof BindError) throw ApiError.badRequest(err.message);
      throw err;
    }
    if (bindsNothing(bindings)) throw ApiError.badRequest("no role or policy bindings matched");

    const sub = typeof idClaims.sub === "string" ? idClaims.sub.slice(0, MAX_SUBJECT) : "";
    const actor: Actor = {
      kind: "server",
      id: "acl-login",
      name: sub === "" ? method.Name : `${method.Name}:${sub}`,
    };
    const identity: AuthenticatedIdentity = { actor, allows: () => true, label: "acl-login" };
    const { index, tokens } = await upsertTokens(this.ctx, identity, [
      {
        Name: `${kind}-${method.Name}`,
        Type: bindings.management ? "management" : "client",
        Policies: bindings.policies,
        Roles: bindings.roles,
        Global: method.TokenLocality === "global",
        ExpirationTTL: method.MaxTokenTTL,
      },
    ]);
    const token = tokens[0] as Record<string, unknown>;
    this.ctx.logger.info(
      { authMethod: method.Name, subject: sub, accessorID: token.AccessorID, type: token.Type },
      "ACL login",
    );
    return { index, token };
  }
}

async function oidcErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof OidcLoginError) throw new ApiError(err.status, err.message);
    throw err;
  }
}
